/**
 * The settings an admin command takes: only the database (`migrate`, `token`, lists), plus
 * the bcrypt cost for commands that set a password and the action key's bootstrap material
 * for `target set`; the rest of a config file is ignored.
 */
import { schema } from '../config.ts'

export const adminSchema = { database: schema.database }
export const passwordSchema = { database: schema.database, bcryptCost: schema.bcryptCost }
export const targetSchema = { database: schema.database, actionKey: schema.actionKey }
