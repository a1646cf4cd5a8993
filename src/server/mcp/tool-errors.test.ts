import { describe, expect, it } from 'vitest';
import {
  LanguageUnavailableError,
  SessionClosedError,
  TooManyCommandsError,
  TooManyContextsError,
  UnknownContextError,
} from '../../errors.js';
import { LimitExceededError, type LimitName, ShuttingDownError } from '../core/errors.js';
import { toolErrorText } from './tool-errors.js';

const LIMITS: LimitName[] = [
  'sessions-per-key',
  'server-sessions',
  'queued-executions',
  'executions-per-minute',
  'code-bytes',
];
/** Flags only `sandcell serve` has: `sandcell mcp` takes --max-sessions, and the rest from SANDCELL_… variables. */
const SERVE_ONLY_FLAGS = /--sessions-per-key|--max-queued-executions|--executions-per-minute|--mcp-sessions-per-key/;

describe('toolErrorText', () => {
  it('gives every limit a hint with no HTTP route, and no serve flag under `sandcell mcp`', () => {
    for (const limit of LIMITS) {
      const error = new LimitExceededError(limit, 'Refused.');
      const stdio = toolErrorText(error, 'stdio');
      const http = toolErrorText(error, 'http');
      for (const text of [stdio, http]) {
        expect(text).toMatch(/^Refused\. \S/);
        expect(text).not.toMatch(/\/v1|DELETE|POST /);
      }
      expect(stdio).not.toMatch(SERVE_ONLY_FLAGS);
      expect(stdio).not.toContain('sandcell serve');
    }
  });

  it('words a closed session for a tool user, passes other typed errors through, and leaves bugs alone', () => {
    expect(toolErrorText(new SessionClosedError('s1'), 'stdio')).not.toContain('createSession');
    expect(toolErrorText(new ShuttingDownError(), 'http')).toBe('The server is shutting down.');
    expect(toolErrorText(new TypeError('a bug'), 'stdio')).toBeUndefined();
  });

  it('words contexts and commands for a tool user: no library call, the bound named', () => {
    const texts = [
      toolErrorText(new UnknownContextError('r-1'), 'stdio'),
      toolErrorText(new TooManyContextsError(8), 'http'),
      toolErrorText(new TooManyCommandsError(64), 'stdio'),
    ];
    expect(texts[0]).toContain('"r-1"');
    expect(texts[1]).toContain('8 contexts');
    expect(texts[2]).toMatch(/^64 commands/);
    for (const text of texts) expect(text).not.toMatch(/session\.|createContext|removeContext|maxC/);
    const missing = new LanguageUnavailableError('r', 'This sandbox has no r runtime; install r-base-core.');
    expect(toolErrorText(missing, 'stdio')).toBe(missing.message);
  });
});
