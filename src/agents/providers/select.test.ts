import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ModelConfigurationError } from '../errors.js';
import { createChatModel, loadConfig } from './select.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-select-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('createChatModel', () => {
  it('picks the provider from the flags, then the keys present', () => {
    expect(createChatModel({}, { OPENAI_API_KEY: 'k' }, {})).toMatchObject({ provider: 'openai', model: 'gpt-4.1' });
    expect(createChatModel({}, { ANTHROPIC_API_KEY: 'k' }, {})).toMatchObject({
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
    });
    expect(
      createChatModel(
        {},
        {
          AZURE_OPENAI_API_KEY: 'k',
          AZURE_OPENAI_ENDPOINT: 'https://x.openai.azure.com',
          OPENAI_API_VERSION: '2024-10-21',
          AZURE_OPENAI_DEPLOYMENT: 'dep',
        },
        {},
      ),
    ).toMatchObject({ provider: 'azure', model: 'dep' });
    expect(
      createChatModel(
        { provider: 'anthropic', model: 'claude-x' },
        { ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k' },
        {},
      ),
    ).toMatchObject({
      provider: 'anthropic',
      model: 'claude-x',
    });
    expect(createChatModel({}, { OPENAI_API_KEY: 'k', SANDCELL_MODEL: 'o4-mini' }, { model: 'ignored' }).model).toBe(
      'o4-mini',
    );
    expect(createChatModel({}, { OPENAI_API_KEY: 'k' }, { model: 'from-config' }).model).toBe('from-config');
  });

  it('needs no key for a local server, but the model name', () => {
    expect(createChatModel({ baseURL: 'http://localhost:11434/v1', model: 'llama3.1' }, {}, {})).toMatchObject({
      provider: 'openai',
    });
    expect(() => createChatModel({ baseURL: 'http://localhost:11434/v1' }, {}, {})).toThrow(
      '--model (e.g. --model llama3.1 for Ollama)',
    );
  });

  it('names what to set when something is missing or wrong', () => {
    expect(() => createChatModel({}, {}, {})).toThrow(ModelConfigurationError);
    expect(() => createChatModel({}, {}, {})).toThrow('set OPENAI_API_KEY');
    expect(() => createChatModel({ provider: 'anthropic' }, {}, {})).toThrow('set ANTHROPIC_API_KEY');
    expect(() => createChatModel({ provider: 'azure', model: 'd' }, {}, {})).toThrow(
      'Azure OpenAI needs AZURE_OPENAI_ENDPOINT (or --base-url), AZURE_OPENAI_API_KEY, OPENAI_API_VERSION',
    );
    expect(() => createChatModel({ provider: 'gemini' }, {}, {})).toThrow('Unknown provider "gemini"');
    expect(() => createChatModel({ reasoningEffort: 'extreme' }, { OPENAI_API_KEY: 'k' }, {})).toThrow(
      'Unknown reasoning effort',
    );
    expect(() =>
      createChatModel({ provider: 'anthropic', reasoningEffort: 'high' }, { ANTHROPIC_API_KEY: 'k' }, {}),
    ).toThrow('applies to OpenAI reasoning models');
  });

  it('reads a config file, and refuses keys or broken JSON in it', () => {
    const good = path.join(directory, 'good.json');
    writeFileSync(
      good,
      JSON.stringify({ provider: 'openai', model: 'qwen2.5-coder', baseURL: 'http://localhost:11434/v1' }),
    );
    expect(loadConfig({ SANDCELL_CONFIG: good })).toEqual({
      config: expect.objectContaining({ model: 'qwen2.5-coder' }),
      file: good,
    });
    const withKey = path.join(directory, 'key.json');
    writeFileSync(withKey, JSON.stringify({ apiKey: 'sk-x' }));
    expect(() => loadConfig({ SANDCELL_CONFIG: withKey })).toThrow('API keys go in the environment');
    const broken = path.join(directory, 'broken.json');
    writeFileSync(broken, '{');
    expect(() => loadConfig({ SANDCELL_CONFIG: broken })).toThrow(`The config file ${broken} is not valid JSON`);
    expect(loadConfig({ XDG_CONFIG_HOME: directory }, directory)).toEqual({ config: {} });
  });
});
