// Counts the tokens of the text on standard input with the o200k_base encoding (GPT-4o and
// later), offline: gpt-tokenizer ships its encodings. Used by tests/python/test_mcp.py to
// measure what a tool list costs an assistant's context.
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

let text = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) text += chunk;
process.stdout.write(`${countTokens(text)}\n`);
