package embed

import (
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Providers.
const (
	ProviderBuiltin = "builtin"
	ProviderOpenAI  = "openai"
	// ProviderNone embeds nothing: the node ranks searches by their words
	// alone, says so in every answer, and never takes the embedding duty.
	ProviderNone = "none"
)

// ErrNone is the vector side's answer on a node whose embedder.provider
// is none: the searches say it in their note and rank by words.
var ErrNone = errors.New("this node embeds nothing: its embedder.provider is none")

// Defaults of the HTTP provider.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultBatchSize = 32
	MaxBatchSize     = 2048
	MaxDimensions    = 8192
	// DefaultOpenAIFloor is the HTTP provider's similarity floor where
	// embedder.min_similarity is unset: about where the common neural
	// embedding models separate related texts from unrelated ones.
	DefaultOpenAIFloor = 0.3
)

// Config is embedder.*: which provider embeds, and where.
type Config struct {
	// Provider is embedder.provider: builtin (default, in-process, no
	// network), openai (an OpenAI-compatible /v1/embeddings server) or
	// none (no vectors: searches rank by words alone).
	Provider string
	// URL is embedder.url: the server's base URL (http or https), e.g.
	// http://127.0.0.1:11434 or https://api.openai.com/v1.
	URL string
	// Model is embedder.model: the model the server is asked for.
	Model string
	// Dimensions is embedder.dimensions: the length of the vectors the
	// model answers (an answer of another length is an error).
	Dimensions int
	// APIKeyEnv is embedder.api_key_env: the name of the environment
	// variable holding the bearer token (the key itself is never in the
	// file); unset sends none.
	APIKeyEnv string
	// Timeout is embedder.timeout: one request's bound (default 30s).
	Timeout time.Duration
	// BatchSize is embedder.batch_size: texts per request (default 32).
	BatchSize int
	// MinSimilarity is embedder.min_similarity: the cosine similarity
	// below which the model's nearest neighbours are not answers (default
	// 0.3; the builtin model's is fixed at 0.2).
	MinSimilarity float64
}

// Validate checks embedder.* and names the field at fault.
func (c Config) Validate() error {
	bad := func(field, value, reason string) error {
		return &engine.ConfigError{Field: "embedder." + field, Value: value, Reason: reason}
	}
	switch c.Provider {
	case "", ProviderBuiltin, ProviderNone:
		for field, set := range map[string]bool{"url": c.URL != "", "model": c.Model != "", "dimensions": c.Dimensions != 0, "api_key_env": c.APIKeyEnv != "", "min_similarity": c.MinSimilarity != 0} {
			if set {
				return bad(field, "", "is only for embedder.provider: openai; builtin and none take no settings")
			}
		}
	case ProviderOpenAI:
		u, err := url.Parse(c.URL)
		switch {
		case c.URL == "":
			return bad("url", "", "is required with embedder.provider: openai (the server's base URL, e.g. http://127.0.0.1:11434)")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return bad("url", c.URL, "is not an http or https URL")
		case c.Model == "":
			return bad("model", "", "is required with embedder.provider: openai (the model the server is asked for)")
		case c.Dimensions < 1 || c.Dimensions > MaxDimensions:
			return bad("dimensions", strconv.Itoa(c.Dimensions), "is required with embedder.provider: openai: the length of the model's vectors, 1 to 8192")
		}
	default:
		return bad("provider", c.Provider, "is not builtin, openai or none")
	}
	if c.MinSimilarity < 0 || c.MinSimilarity >= 1 {
		return bad("min_similarity", strconv.FormatFloat(c.MinSimilarity, 'g', -1, 64), "is out of range: 0 to below 1")
	}
	if c.Timeout < 0 {
		return bad("timeout", c.Timeout.String(), "is negative")
	}
	if c.BatchSize < 0 || c.BatchSize > MaxBatchSize {
		return bad("batch_size", strconv.Itoa(c.BatchSize), "is out of range: 1 to 2048")
	}
	return nil
}

// New builds the embedder a validated config names: nil for provider
// none, whose node embeds nothing.
func New(c Config) (Embedder, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Provider {
	case ProviderOpenAI:
		return NewOpenAI(c), nil
	case ProviderNone:
		return nil, nil
	}
	return NewBuiltin(), nil
}
