// The Node clients, pointed at edgeway: `node clients.mjs <gateway url> <app key> <edge model>`.
// Prints one JSON object: for each client, what its plain call, its stream and its structured or
// tool feature returned. tests/test_node_clients.py checks it.
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateObject, generateText, streamObject, streamText, tool } from "ai";
import OpenAI from "openai";
import { z } from "zod";

const [url, key, model] = process.argv.slice(2);
const capital = z.object({ country: z.string(), city: z.string() });
const weather = tool({
  description: "The weather in a city now",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `It is sunny in ${city}.`,
});
const out = {};

async function openaiPackage() {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
  const messages = [{ role: "user", content: "Say hello." }];
  const plain = await client.chat.completions.create({ model, messages, max_tokens: 8 });
  let streamed = "";
  for await (const chunk of await client.chat.completions.create({ model, messages, max_tokens: 8, stream: true })) {
    streamed += chunk.choices[0]?.delta?.content ?? "";
  }
  const schema = { type: "object", properties: { country: { type: "string" }, city: { type: "string" } }, required: ["country", "city"], additionalProperties: false };
  const shaped = await client.chat.completions.create({
    model, max_tokens: 60, temperature: 0,
    messages: [{ role: "user", content: "The capital of France? Answer as JSON." }],
    response_format: { type: "json_schema", json_schema: { name: "capital", schema, strict: true } },
  });
  const called = await client.chat.completions.create({
    model, max_tokens: 60, temperature: 0, tool_choice: "required",
    messages: [{ role: "user", content: "What is the weather in Paris?" }],
    tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }],
  });
  const response = await client.responses.create({ model, input: "Say hello.", max_output_tokens: 16 });
  return {
    plain: plain.choices[0].message.content,
    streamed,
    structured: JSON.parse(shaped.choices[0].message.content),
    tool: called.choices[0].message.tool_calls?.[0]?.function?.name ?? null,
    responses: response.output_text,
  };
}

async function aiSdk(provider) {
  const settings = { model: provider, maxOutputTokens: 60, temperature: 0 };
  const plain = await generateText({ ...settings, prompt: "Say hello." });
  let streamed = "";
  for await (const piece of streamText({ ...settings, prompt: "Say hello." }).textStream) streamed += piece;
  const object = await generateObject({ ...settings, schema: capital, prompt: "What is the capital of France? Answer as JSON with the country and the city." });
  let partial = null;
  for await (const piece of streamObject({ ...settings, schema: capital, prompt: "What is the capital of France? Answer as JSON with the country and the city." }).partialObjectStream) partial = piece;
  const called = await generateText({
    ...settings, prompt: "What is the weather in Paris?", tools: { get_weather: weather }, toolChoice: "required",
  });
  return {
    plain: plain.text,
    streamed,
    structured: object.object,
    streamedObject: partial,
    tool: called.toolCalls[0]?.toolName ?? null,
    toolResult: called.toolResults[0]?.output ?? null,
  };
}

const compatible = createOpenAICompatible({ name: "edgeway", baseURL: `${url}/v1`, apiKey: key, supportsStructuredOutputs: true });
const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: key });
for (const [name, run] of [
  ["openai", openaiPackage],
  ["ai-sdk openai-compatible", () => aiSdk(compatible.chatModel(model))],
  ["ai-sdk openai chat", () => aiSdk(openai.chat(model))],
  ["ai-sdk openai responses", () => aiSdk(openai.responses(model))],
]) {
  try {
    out[name] = await run();
  } catch (error) {
    out[name] = { error: String(error?.stack ?? error).split("\n")[0], text: error?.text, finish: error?.finishReason };
  }
}
console.log(JSON.stringify(out));
