/** Identifier formats shared by several domains (wire schemas). */
import { Type } from 'typebox'

/** A channel's URL-safe, immutable name; also its id in paths. */
export const CHANNEL_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/
export const ChannelName = Type.String({ pattern: CHANNEL_NAME.source })

/** A reader's username. */
export const USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/
export const Username = Type.String({ pattern: USERNAME.source })
