// Package embed turns text into vectors for the vectors domain: the
// Embedder interface every provider satisfies, the in-process model a
// node uses when nothing is configured (builtin, no network), the
// OpenAI-compatible HTTP provider (POST …/v1/embeddings) for a fleet that
// runs an embedding server, and their Tier A configuration (embedder.*),
// which may also say none: a node that embeds nothing (New answers no
// Embedder, and the vectors domain turns its vector side off).
//
// Every vector an Embedder answers is L2-normalised, so a dot product is
// the cosine similarity. Model names the space a vector lives in: two
// vectors are compared only when their models are the same string.
package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Embedder turns texts into vectors.
type Embedder interface {
	// Model names the vector space (provider, model, dimensions): vectors
	// of two different models are never compared.
	Model() string
	// Dims is the length of every vector Embed answers.
	Dims() int
	// Embed answers one unit vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Floor is the cosine similarity below which this model's texts are
	// unrelated: a nearest neighbour under it is not an answer.
	Floor() float64
}

// MaxTextRunes is how much of a text is embedded: the head of a long
// description says what it is about, and a model's context is bounded.
const MaxTextRunes = 4000

// Truncate cuts s to MaxTextRunes runes.
func Truncate(s string) string {
	n := 0
	for i := range s {
		if n == MaxTextRunes {
			return s[:i]
		}
		n++
	}
	return s
}

// Normalize scales v to unit length in place; a zero vector stays zero.
func Normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// Dot is the dot product of two vectors of one length: the cosine of two
// unit vectors.
func Dot(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// ErrProvider wraps a provider's failure (unreachable, refused, an answer
// that is not one vector per text of the declared length).
var ErrProvider = errors.New("embed: the embedding provider failed")

func providerErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProvider, fmt.Sprintf(format, args...))
}
