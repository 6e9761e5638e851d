package peerbench

import (
	"math/rand/v2"
	"strings"
)

// The corpus both targets hold for the same-job workloads: items whose
// titles and descriptions are words drawn from one vocabulary with a
// Zipf distribution, as real text is, so that a search term matches many
// items or few depending on its rank. It is a pure function of the item's
// index: both targets file the same text, and a run is repeatable.

// vocabularySize is how many distinct words the corpus uses.
const vocabularySize = 4000

// syllables make the vocabulary's words: pronounceable, lower case
// ASCII, so FTS5's unicode61 tokenizer keeps each word whole on both
// targets.
var syllables = []string{"ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "xe", "bo", "da", "fi", "gu", "he", "jo", "ze", "wa", "ny", "qui"}

// word is the vocabulary's word of rank r (0: the most frequent). Every
// rank has its own word: r is written in base len(syllables), at least
// two digits, so no word is a prefix-free collision of another.
func word(r int) string {
	var b strings.Builder
	n := len(syllables)
	for digits := 0; digits < 2 || r > 0; digits++ {
		b.WriteString(syllables[r%n])
		r /= n
	}
	return b.String()
}

// zipf draws ranks with the skew of natural text (s = 1.1).
func zipf(seed uint64) *rand.Zipf {
	return rand.NewZipf(rand.New(rand.NewPCG(seed, 0x5eed)), 1.1, 1, vocabularySize-1)
}

// words is n words drawn for seed.
func words(z *rand.Zipf, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = word(int(z.Uint64()))
	}
	return strings.Join(ws, " ")
}

// corpusText is the title (5 words) and description (16 words) of the
// corpus's item i.
func corpusText(i int) (title, description string) {
	z := zipf(uint64(i))
	return words(z, 5), words(z, 16)
}

// searchTerms is the text of search i: half one term, half two, each
// drawn from ranks 5 to 500 — words common enough to match a page of
// items, rare enough that the ranking has work to do, as in the
// machine's FTS5 floor (research/perf-limits.md, 2e).
func searchTerms(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 0x5ea7c4))
	t := word(5 + r.IntN(496))
	if i%2 == 1 {
		t += " " + word(5+r.IntN(496))
	}
	return t
}

// assignees are who the corpus's items are assigned to.
func assignee(i int) string { return "user-" + string(rune('a'+i%16)) }
