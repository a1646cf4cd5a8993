/**
 * A Jupyter message as it crosses the channels websocket (messaging protocol
 * 5.3), and how sandcell builds the ones it sends: every header field a client
 * checks, the request's whole header echoed as `parent_header`, ISO dates with `Z`.
 */
import { randomUUID } from 'node:crypto';

export const PROTOCOL_VERSION = '5.3';

export type Channel = 'shell' | 'control' | 'iopub' | 'stdin';

export interface MessageHeader {
  msg_id: string;
  msg_type: string;
  session: string;
  username: string;
  date: string;
  version: string;
  [extra: string]: unknown;
}

export interface JupyterMessage {
  channel: Channel;
  header: MessageHeader;
  /** `{}` for a message that answers nothing (a kernel's own status). */
  parent_header: Partial<MessageHeader>;
  metadata: Record<string, unknown>;
  content: Record<string, unknown>;
  buffers: Uint8Array[];
}

/** What a kernel incarnation signs its messages with: a new `session` after each restart. */
export interface Sender {
  session: string;
  username: string;
}

export function reply(
  sender: Sender,
  channel: Channel,
  msgType: string,
  content: Record<string, unknown>,
  parent: Partial<MessageHeader> = {},
  metadata: Record<string, unknown> = {},
): JupyterMessage {
  return {
    channel,
    header: {
      msg_id: randomUUID(),
      msg_type: msgType,
      session: sender.session,
      username: sender.username,
      date: new Date().toISOString(),
      version: PROTOCOL_VERSION,
    },
    parent_header: parent,
    metadata,
    content,
    buffers: [],
  };
}

export function isChannel(value: unknown): value is Channel {
  return value === 'shell' || value === 'control' || value === 'iopub' || value === 'stdin';
}
