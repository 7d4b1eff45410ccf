// Usage: HF_TOKENIZERS=<path to @huggingface/tokenizers/dist/tokenizers.mjs> node hf.mjs MODE OUT.json
// MODE: uncased | cased | uncased-keep-accents (BertNormalizer lowercase / strip_accents).
const { Tokenizer } = await import(process.env.HF_TOKENIZERS);
import fs from "fs";
const LOWER = process.argv[2] !== "cased";
const STRIP = process.argv[2] === "uncased-keep-accents" ? false : null;
const vocabList = fs.readFileSync("vocab.txt", "utf8").split("\n").filter((l, i, a) => !(i === a.length - 1 && l === ""));
const vocab = {}; vocabList.forEach((t, i) => { vocab[t] = i; });
const specials = ["[PAD]","[UNK]","[CLS]","[SEP]","[MASK]"];
const tj = {
  version: "1.0", truncation: null, padding: null,
  added_tokens: specials.map(s => ({id: vocab[s], content: s, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true})),
  normalizer: {type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: STRIP, lowercase: LOWER},
  pre_tokenizer: {type: "BertPreTokenizer"},
  post_processor: null, decoder: null,
  model: {type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab},
};
const tc = {do_lower_case: LOWER, model_max_length: 512, tokenizer_class: "BertTokenizer"};
const tok = new Tokenizer(tj, tc);
const texts = JSON.parse(fs.readFileSync("texts.json", "utf8"));
const out = texts.map(t => tok.encode(t, {add_special_tokens: false}).ids);
fs.writeFileSync(process.argv[3] || "hf.json", JSON.stringify(out));
console.log("ok", out.length);
