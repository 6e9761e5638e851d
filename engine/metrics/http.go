package metrics

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// refusalPeek bounds what of a refused answer's body is kept to read its
// code: a refusal object is a sentence and a few fields.
const refusalPeek = 16 << 10

// CountRefusals wraps an HTTP surface so every refusal it answers (a 4xx
// or 5xx whose JSON body names "refused") is counted by code under the
// surface surfaceOf names for the request. The body passes through
// untouched; streaming answers (the MCP routes) keep their Flusher.
func (r *Registry) CountRefusals(surfaceOf func(*http.Request) string, next http.Handler) http.Handler {
	if r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		pw := &peekWriter{ResponseWriter: w}
		next.ServeHTTP(pw, req)
		if pw.status < 400 || pw.body.Len() == 0 {
			return
		}
		var obj struct {
			Refused string `json:"refused"`
		}
		if json.Unmarshal(pw.body.Bytes(), &obj) == nil && obj.Refused != "" {
			r.Refusal(obj.Refused, surfaceOf(req))
		}
	})
}

// peekWriter keeps the status and, on an error status with a JSON body,
// the body's first bytes.
type peekWriter struct {
	http.ResponseWriter
	status int
	peek   bool
	body   bytes.Buffer
}

func (p *peekWriter) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
		p.peek = status >= 400 && strings.HasPrefix(p.Header().Get("Content-Type"), "application/json")
	}
	p.ResponseWriter.WriteHeader(status)
}

func (p *peekWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.peek && p.body.Len() < refusalPeek {
		p.body.Write(b[:min(len(b), refusalPeek-p.body.Len())])
	}
	return p.ResponseWriter.Write(b)
}

// Flush keeps a streaming answer streaming.
func (p *peekWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (p *peekWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
