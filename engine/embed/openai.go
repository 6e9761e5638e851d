package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// OpenAI is the OpenAI-compatible HTTP provider: it POSTs
// {"model", "input": [texts]} to <url>/v1/embeddings (or <url>/embeddings
// where url already ends in /v1) and reads data[i].embedding back, which
// OpenAI, Ollama, llama.cpp's server, vLLM and Hugging Face's
// text-embeddings-inference all answer.
type OpenAI struct {
	endpoint string
	model    string
	dims     int
	batch    int
	keyEnv   string
	floor    float64
	client   *http.Client
}

// NewOpenAI builds the provider from a validated config.
func NewOpenAI(c Config) *OpenAI {
	base := strings.TrimRight(c.URL, "/")
	endpoint := base + "/v1/embeddings"
	if strings.HasSuffix(base, "/v1") {
		endpoint = base + "/embeddings"
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	batch := c.BatchSize
	if batch == 0 {
		batch = DefaultBatchSize
	}
	floor := c.MinSimilarity
	if floor == 0 {
		floor = DefaultOpenAIFloor
	}
	return &OpenAI{endpoint: endpoint, model: c.Model, dims: c.Dimensions, batch: batch, keyEnv: c.APIKeyEnv, floor: floor,
		client: &http.Client{Timeout: timeout}}
}

// Floor is embedder.min_similarity (default DefaultOpenAIFloor).
func (o *OpenAI) Floor() float64 { return o.floor }

// Model is "openai:<model>@<dimensions>".
func (o *OpenAI) Model() string { return fmt.Sprintf("openai:%s@%d", o.model, o.dims) }

// Dims is embedder.dimensions.
func (o *OpenAI) Dims() int { return o.dims }

// Embed asks the server in batches of embedder.batch_size texts.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.batch {
		end := min(start+o.batch, len(texts))
		vs, err := o.call(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (o *OpenAI) call(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = Truncate(t)
		if strings.TrimSpace(in[i]) == "" {
			in[i] = " " // some servers refuse an empty input
		}
	}
	body, err := json.Marshal(embeddingsRequest{Model: o.model, Input: in, EncodingFormat: "float"})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if o.keyEnv != "" {
		if key := os.Getenv(o.keyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	start := time.Now()
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, providerErr("POST %s: %v", o.endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, providerErr("POST %s: reading the answer: %v", o.endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, providerErr("POST %s answered %s after %s: %s", o.endpoint, resp.Status, time.Since(start).Round(time.Millisecond), snippet(raw))
	}
	var er embeddingsResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, providerErr("POST %s: the answer is not an embeddings list: %v", o.endpoint, err)
	}
	if len(er.Data) != len(texts) {
		return nil, providerErr("POST %s answered %d embeddings for %d texts", o.endpoint, len(er.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, providerErr("POST %s answered embedding index %d twice or out of range", o.endpoint, d.Index)
		}
		if len(d.Embedding) != o.dims {
			return nil, providerErr("POST %s answered a %d-dimension vector; embedder.dimensions says %d", o.endpoint, len(d.Embedding), o.dims)
		}
		Normalize(d.Embedding)
		out[d.Index] = d.Embedding
	}
	return out, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
