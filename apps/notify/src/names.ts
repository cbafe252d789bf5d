/** Identifier formats shared by several domains (wire schemas). */
import { Type } from 'typebox'
import { CHANNEL_NAME, USERNAME } from './name-patterns.ts'

export { CHANNEL_NAME, USERNAME }

export const ChannelName = Type.String({ pattern: CHANNEL_NAME.source })
export const Username = Type.String({ pattern: USERNAME.source })
