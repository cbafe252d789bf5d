/** The settings an admin command takes (`migrate`, `token`): only the database; the rest of a config file is ignored. */
import { schema } from '../config.ts'

export const adminSchema = { database: schema.database }
