// The cookbook's data-analysis agent with sandcell/agents: the FileAccessAgent copies the CSV into a
// sandboxed session and previews it; the PythonExecAgent writes and runs pandas code until it can answer.
//
//   OPENAI_API_KEY=... node examples/traffic-accidents/analyse.mjs "What factors contribute the most to accident frequency?"
//
// Any provider works: SANDCELL_PROVIDER=anthropic with ANTHROPIC_API_KEY, or a local server with
// OPENAI_BASE_URL=http://localhost:11434/v1 SANDCELL_MODEL=qwen2.5-coder (Ollama, no key).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createChatModel, DataChat } from 'sandcell/agents';

const here = (name) => fileURLToPath(new URL(name, import.meta.url));
const question = process.argv[2] ?? 'What factors contribute the most to accident frequency?';

const chat = await DataChat.create({
  model: createChatModel(), // provider, model and key from the environment (or a sandcell config file)
  data: [here('traffic_accidents.csv')],
  context: readFileSync(here('columns.md'), 'utf8'),
  outputDir: 'sandcell-output',
  onEvent(event) {
    if (event.type === 'code-ready')
      console.error(`--- code (attempt ${event.attempt}/${event.maxAttempts}) ---\n${event.code}`);
    if (event.type === 'execution-end') console.error(event.execution.stdout || event.execution.error?.value || '');
  },
});
try {
  const answer = await chat.ask(question);
  console.log(answer.text);
  for (const file of answer.files) console.log(`[saved ${file.savedTo}]`);
} finally {
  await chat.close();
}
