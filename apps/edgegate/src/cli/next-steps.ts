/** Next steps more than one command prints, spelled the way the user ran edgegate (`bin/edgegate` in a checkout). */
import { invokedAs } from '@gatehouse/kit/cli/program.ts'

/** What `status` and `node list` say before any node is registered. */
export const noNodesYet = (): string => `no nodes yet: ${invokedAs('edgegate')} node add --kind sshgate INSTANCE_ID`
