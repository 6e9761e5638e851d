package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/embed"
)

func cos(t *testing.T, e embed.Embedder, a, b string) float32 {
	t.Helper()
	vs, err := e.Embed(context.Background(), []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	return embed.Dot(vs[0], vs[1])
}

// TestBuiltinNearness: paraphrases (synonyms the thesaurus knows, word
// forms the n-grams catch) land nearer each other than unrelated texts.
func TestBuiltinNearness(t *testing.T) {
	e := embed.NewBuiltin()
	for _, c := range []struct{ a, near, far string }{
		{"Users cannot log in with SSO", "Sign-in fails for single sign-on accounts", "Dark mode colours are wrong in the sidebar"},
		{"App crashes when uploading a photo", "Application crashed while attaching an image", "Add CSV export to the reports page"},
		{"Dashboard is very slow to load", "Latency of the dashboard page is terrible", "Rename the billing plan tiers"},
		{"Delete button does nothing", "Removing an item via the delete control has no effect", "Translate the onboarding emails to German"},
	} {
		n, f := cos(t, e, c.a, c.near), cos(t, e, c.a, c.far)
		if n <= f+0.1 {
			t.Errorf("%q: paraphrase %.3f is not clearly nearer than unrelated %.3f", c.a, n, f)
		}
	}
}

func TestBuiltinUnitAndDeterministic(t *testing.T) {
	e := embed.NewBuiltin()
	a, _ := e.Embed(context.Background(), []string{"Checkout page times out", "", "Checkout page times out"})
	if len(a[0]) != e.Dims() || e.Dims() != 384 {
		t.Fatalf("dims %d, want 384", len(a[0]))
	}
	if d := embed.Dot(a[0], a[0]); math.Abs(float64(d)-1) > 1e-5 {
		t.Errorf("|v|² = %f, want 1", d)
	}
	if embed.Dot(a[1], a[1]) != 0 {
		t.Errorf("an empty text is not the zero vector")
	}
	for i := range a[0] {
		if a[0][i] != a[2][i] {
			t.Fatal("the same text embedded twice differs")
		}
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{"creates": "creat", "created": "creat", "creating": "creat", "create": "creat",
		"crashes": "crash", "crashed": "crash", "stopped": "stop", "queries": "query", "status": "status", "running": "run", "api": "api"} {
		if got := embed.Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

// server answers /v1/embeddings the way OpenAI-compatible servers do,
// with vectors derived from the text so answers can be checked.
func server(t *testing.T, dims int, calls *atomic.Int32, check func(r *http.Request)) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if check != nil {
			check(r)
		}
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "no such route", http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		// Answer in reverse order: the client must sort by index.
		for i := len(req.Input) - 1; i >= 0; i-- {
			v := make([]float32, dims)
			v[len(req.Input[i])%dims] = 3
			out.Data = append(out.Data, datum{Index: i, Embedding: v})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
}

func TestOpenAIProvider(t *testing.T) {
	var calls atomic.Int32
	var auth atomic.Value
	srv := server(t, 8, &calls, func(r *http.Request) { auth.Store(r.Header.Get("Authorization")) })
	defer srv.Close()
	t.Setenv("CREWLET_TEST_EMBED_KEY", "sk-test")
	c := embed.Config{Provider: embed.ProviderOpenAI, URL: srv.URL, Model: "m", Dimensions: 8, APIKeyEnv: "CREWLET_TEST_EMBED_KEY", BatchSize: 2}
	e, err := embed.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if e.Model() != "openai:m@8" || e.Dims() != 8 {
		t.Fatalf("model %q dims %d", e.Model(), e.Dims())
	}
	vs, err := e.Embed(context.Background(), []string{"a", "bb", "ccc"})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("3 texts in batches of 2 made %d requests, want 2", calls.Load())
	}
	for i, v := range vs {
		if v[i+1] != 1 {
			t.Errorf("text %d: vector %v, want unit vector on dimension %d (answers sorted by index, normalised)", i, v, i+1)
		}
	}
	if auth.Load() != "Bearer sk-test" {
		t.Errorf("Authorization %q, want the key from embedder.api_key_env", auth.Load())
	}
	// A base URL ending in /v1 is not given a second one.
	c.URL = srv.URL + "/v1/"
	e2, _ := embed.New(c)
	if _, err := e2.Embed(context.Background(), []string{"x"}); err != nil {
		t.Errorf("base URL with /v1: %v", err)
	}
	// Vectors of another length are refused.
	c.URL, c.Dimensions = srv.URL, 16
	e3, _ := embed.New(c)
	if _, err := e3.Embed(context.Background(), []string{"x"}); !errors.Is(err, embed.ErrProvider) || !strings.Contains(err.Error(), "8-dimension") {
		t.Errorf("wrong length: %v", err)
	}
}

func TestOpenAIProviderFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "slow") {
			time.Sleep(300 * time.Millisecond)
		}
		http.Error(w, `{"error":{"message":"model not found"}}`, http.StatusNotFound)
	}))
	defer srv.Close()
	e, _ := embed.New(embed.Config{Provider: embed.ProviderOpenAI, URL: srv.URL, Model: "m", Dimensions: 4})
	_, err := e.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, embed.ErrProvider) || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "model not found") {
		t.Errorf("a 404: %v", err)
	}
	e, _ = embed.New(embed.Config{Provider: embed.ProviderOpenAI, URL: srv.URL + "/slow", Model: "m", Dimensions: 4, Timeout: 50 * time.Millisecond})
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, embed.ErrProvider) {
		t.Errorf("a timeout: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := []embed.Config{{}, {Provider: "builtin"}, {Provider: "none"}, {Provider: "openai", URL: "https://api.openai.com/v1", Model: "text-embedding-3-small", Dimensions: 1536, APIKeyEnv: "OPENAI_API_KEY"}}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for field, c := range map[string]embed.Config{
		"embedder.provider":   {Provider: "onnx"},
		"embedder.url":        {Provider: "openai", URL: "ftp://x", Model: "m", Dimensions: 3},
		"embedder.model":      {Provider: "openai", URL: "http://127.0.0.1:1", Dimensions: 3},
		"embedder.dimensions": {Provider: "openai", URL: "http://127.0.0.1:1", Model: "m"},
		"embedder.batch_size": {BatchSize: 5000},
		"embedder.timeout":    {Timeout: -time.Second},
	} {
		var ce *engine.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%+v: %v, want an error naming %s", c, err, field)
		}
	}
	var ce *engine.ConfigError
	if err := (embed.Config{URL: "http://x"}).Validate(); !errors.As(err, &ce) || ce.Field != "embedder.url" {
		t.Errorf("builtin with a url: %v", err)
	}
	if err := (embed.Config{Provider: embed.ProviderNone, Model: "m"}).Validate(); !errors.As(err, &ce) || ce.Field != "embedder.model" {
		t.Errorf("none with a model: %v", err)
	}
	if e, err := embed.New(embed.Config{Provider: embed.ProviderNone}); e != nil || err != nil {
		t.Errorf("New with provider none: %v, %v; want no embedder", e, err)
	}
}
