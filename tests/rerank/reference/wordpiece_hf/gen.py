# Generates texts.json (hostile texts: accents composed and decomposed, CJK, scripts with final
# sigma and dotted I, fullwidth forms, emoji sequences, controls, zero-width and odd spaces, words
# over 100 characters, special tokens written in the text) and vocab.txt (specials, most
# characters alone and as ## pieces, some words and word pieces; a few characters left out so
# that [UNK] appears) for the WordPiece differential test. Usage: python3 gen.py 1
import random, json, unicodedata, sys
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
ascii_words = "the cat sat on mat running runner unbelievable tokenization what is a passage query retrieval bias gender female male nurse doctor engineer".split()
pools = [
  ascii_words,
  ["café","naïve","Ångström","résumé","Ærø","façade","Straße","ǅemal","ﬁnance","ÉCOLE","über","São","Zürich","ĳssel","Œuvre"],
  ["e\u0301t\u0301e","a\u0308b","n\u0303o","\u0301x"],
  ["中文字符","日本語","漢字かな","ひらがな","カタカナ","한국어","〇"],
  ["ΣΊΣΥΦΟΣ","ΟΔΟΣ","Σ","İstanbul","ẞ","ΑΘΗΝΑ","Москва","ЁЛКА"],
  ["ＡＢＣ","１２３","ｶﾀｶﾅ","①②"],
  ["😀","👍🏽","🇩🇪","❤️","👨‍👩‍👧"],
  ["3.14","1,000","U.S.A.","e-mail","don't","rock'n'roll","C++","#hashtag","@user","a/b","x_y","50%","$5","~tilde","`q`","«quote»","—dash","…","¿qué?","¡sí!"],
  ["\u200bzw","zw\u200dj","soft\u00adhyphen","bidi\u202etext","\ufeffbom","nul\x00x","bell\x07x","del\x7fx","rep\ufffdx"],
  ["مرحبا","שלום","हिन्दी","ไทย","ქართული"],
  ["a"*101, "ab"*60, "x"*100],
]
seps = [" ","  ","\t","\n","\r\n","\u00a0","\u3000","\u2028","\u2003",""," . ",", ","-"]
texts = []
for i in range(400):
    n = rng.randint(1, 14)
    parts = []
    for _ in range(n):
        pool = rng.choice(pools)
        parts.append(rng.choice(pool))
        parts.append(rng.choice(seps))
    t = "".join(parts)
    if rng.random() < 0.3: t = t.upper() if rng.random()<0.5 else t.title()
    texts.append(t)
texts += ["", " ", "\t\n", "\u200b", "[CLS] [SEP] [MASK]", "[UNK]", "##ing", "a ## b"]
# vocabulary: specials, every char (lower + NFD + accent-stripped and raw lower), ## forms, words and prefixes
chars = set()
for t in texts:
    low = t.lower()
    nfd = unicodedata.normalize("NFD", low)
    for s in (low, nfd, t):
        for c in s:
            if not c.isspace() and not unicodedata.category(c).startswith('C'): chars.add(c)
chars = sorted(chars)
rng.shuffle(chars)
excluded = set(chars[: len(chars)//15])
vocab = ["[PAD]","[UNK]","[CLS]","[SEP]","[MASK]"]
seen = set(vocab)
def add(tok):
    if tok not in seen: seen.add(tok); vocab.append(tok)
for c in sorted(chars):
    if c in excluded: continue
    add(c)
    if rng.random() < 0.8: add("##"+c)
for w in ascii_words + ["cafe","naive","angstrom","resume","facade","strasse","uber","zurich","finance","ecole","istanbul","σισυφος","οδος"]:
    add(w.lower())
    for k in range(2, len(w)):
        if rng.random() < 0.3: add(w.lower()[:k])
        if rng.random() < 0.3: add("##"+w.lower()[k:])
open("vocab.txt","w",encoding="utf-8").write("\n".join(vocab)+"\n")
json.dump(texts, open("texts.json","w",encoding="utf-8"), ensure_ascii=False)
print(len(texts), "texts,", len(vocab), "vocab,", len(excluded), "chars excluded")
