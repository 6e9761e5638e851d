package embed

import (
	"context"
	"hash/fnv"
	"strings"
	"unicode"
)

// BuiltinModel names the in-process model's vector space.
const BuiltinModel = "builtin:crewlet-lexical-v1@384"

// builtinDims is the length of its vectors.
const builtinDims = 384

// Feature weights of the builtin model: a word's stem, the concept it
// belongs to (its thesaurus group), the pair it forms with the next word,
// and its character n-grams (shared among them).
const (
	weightStem    = 1.0
	weightConcept = 1.1
	weightBigram  = 0.5
	weightGrams   = 0.8
)

// Builtin is the in-process model: a deterministic lexical-semantic
// embedding that needs no network, no weights file and no native
// runtime. A text becomes its words' stems, their character 3- and
// 4-grams (so "crash", "crashes" and "crashed", or a typo, land near each
// other), the pairs of adjacent words, and the concept each word or pair
// belongs to in a thesaurus of the words work trackers use ("log in",
// "sign in" and "authenticate" are one concept), each feature hashed with
// a sign into 384 dimensions (the hashing trick) and the sum normalised.
//
// It is no neural model: it knows the synonyms its thesaurus lists and
// the word forms its n-grams catch, nothing of meaning beyond them. Where
// a fleet has a real embedding model, the OpenAI-compatible provider
// serves it; the model name keeps the two spaces apart.
type Builtin struct{ concepts map[string]string }

// NewBuiltin returns the in-process model.
func NewBuiltin() *Builtin { return &Builtin{concepts: thesaurus()} }

// Model is BuiltinModel.
func (*Builtin) Model() string { return BuiltinModel }

// BuiltinFloor is the builtin model's floor: unrelated texts score
// within about ±0.15 of 0 (their features land on dimensions at random),
// texts sharing a concept or a word's stem 0.25 and above.
const BuiltinFloor = 0.2

// Floor is BuiltinFloor.
func (*Builtin) Floor() float64 { return BuiltinFloor }

// Dims is 384.
func (*Builtin) Dims() int { return builtinDims }

// Embed embeds every text; it never fails but on a cancelled context.
func (b *Builtin) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = b.embed(t)
	}
	return out, nil
}

func (b *Builtin) embed(text string) []float32 {
	v := make([]float32, builtinDims)
	words := Words(Truncate(text))
	prev := ""
	for _, w := range words {
		stem := Stem(w)
		if !particles[stem] {
			add(v, "w:"+stem, weightStem)
			if c, ok := b.concepts[stem]; ok {
				add(v, "c:"+c, weightConcept)
			}
			grams := ngrams(stem)
			for _, g := range grams {
				add(v, "g:"+g, weightGrams/float32(len(grams)))
			}
		}
		if prev != "" {
			pair := prev + " " + stem
			add(v, "b:"+pair, weightBigram)
			if c, ok := b.concepts[pair]; ok {
				add(v, "c:"+c, weightConcept)
			}
		}
		prev = stem
	}
	Normalize(v)
	return v
}

// add puts weight w of feature f on its hashed dimension, with the sign
// the hash's top bit gives (so unrelated features cancel on average
// rather than pile up).
func add(v []float32, f string, w float32) {
	h := fnv.New64a()
	h.Write([]byte(f))
	x := h.Sum64()
	i := x % uint64(len(v))
	if x>>63 == 1 {
		w = -w
	}
	v[i] += w
}

// ngrams are the character 3- and 4-grams of a stem marked at both ends;
// a stem of one or two letters has none.
func ngrams(stem string) []string {
	r := []rune("<" + stem + ">")
	if len(r) < 5 {
		return nil
	}
	var out []string
	for n := 3; n <= 4; n++ {
		for i := 0; i+n <= len(r); i++ {
			out = append(out, string(r[i:i+n]))
		}
	}
	return out
}

// Words are the lower-cased words of text that carry meaning: runs of
// letters and digits, stop words and single letters left out.
func Words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(w)) < 2 || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// Stem strips the common English inflections (plural, past, -ing, -ly)
// and a final e, so the forms of one word share a stem: "creates",
// "created", "creating" and "create" are all "creat".
func Stem(w string) string {
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ly") && len(w) > 5:
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// undouble drops the second of a doubled final consonant (stopp → stop).
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// particles are the words of phrasal verbs (log in, sign out, shut
// down): too common to weigh as words of their own, they count only in
// the pairs they form.
var particles = map[string]bool{"in": true, "out": true, "up": true, "down": true, "off": true, "on": true, "not": true, "back": true}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for with from into onto over under
		as is are was were be been being am do does did doing have has had having it its it's this that these those
		there here when where which who whom whose what why how all any both each few more most other some such no nor
		only own same so than too very can will just should would could may might must shall i me my we our you
		your he him his she her they them their us also about after again against before below between during
		once further while until because through above via per etc eg ie`) {
		m[w] = true
	}
	return m
}()

// thesaurus maps each stem (and stem pair) of a group to the group's
// first word: the concepts the builtin model shares between synonyms.
func thesaurus() map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(thesaurusGroups, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		terms := strings.Split(line, ",")
		head := ""
		for _, t := range terms {
			var stems []string
			for _, w := range Words(t) {
				stems = append(stems, Stem(w))
			}
			if len(stems) == 0 || len(stems) > 2 {
				continue
			}
			key := strings.Join(stems, " ")
			if head == "" {
				head = key
			}
			if _, taken := m[key]; !taken {
				m[key] = head
			}
		}
	}
	return m
}
