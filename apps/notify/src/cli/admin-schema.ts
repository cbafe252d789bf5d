/**
 * The settings an admin command takes: only the database (`migrate`, `token`, lists), plus
 * the bcrypt cost for commands that set a password and the action key's bootstrap material
 * for `target set`, the public URL hook URLs are printed with (`hook create`, `channel create`);
 * the rest of a config file is ignored.
 */
import { schema } from '../config.ts'

export const adminSchema = { database: schema.database }
export const passwordSchema = { database: schema.database, bcryptCost: schema.bcryptCost }
export const targetSchema = { database: schema.database, actionKey: schema.actionKey }
export const hookSchema = {
  database: schema.database,
  // serve's setting, with what it does here: serve's doc speaks of authentication.
  publicUrl: {
    ...schema.publicUrl,
    options: { ...schema.publicUrl.options, doc: "the server's browser origin, to print the hook's full URL" },
  },
}
