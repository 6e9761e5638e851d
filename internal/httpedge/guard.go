package httpedge

// The operator guard: every route but the health checks admits a request
// only from this node's own Host and Origin names and with the operator's
// bearer token; the dashboard's page and assets want the names alone.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/crewlet/crewlet/engine"
)

// GuardOptions configure the guard.
type GuardOptions struct {
	// Token is the bearer token every request must carry. Empty refuses
	// every request (fail closed).
	Token string
	// AllowedHosts are the Host values (host, or host:port) the node is
	// reached by besides loopback (Config.Hosts). A bare host matches any
	// port. localhost, 127.0.0.1 and [::1] are always allowed on the port
	// the request came in on.
	AllowedHosts []string
	Logger       *slog.Logger
}

// Refusal codes of the guard. They are not in the engine's table: they
// are about the request's credentials and origin, not a read or write
// (like the edge's own too_large, CodeTooLarge, which answers before the
// guard).
const (
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
)

// Guard is the operator guard of one node: it refuses a request whose
// Host is not one the node is reached by (403), whose Origin, when
// present, is not http(s):// such a host (403), or, on the operator's
// routes, that does not carry Authorization: Bearer <Token> (401 with
// WWW-Authenticate: Bearer). It applies to every method. Refusal bodies
// are JSON {"refused": "...", "message": "..."}. It is the rest.Guard a
// node's routes are mounted behind.
type Guard struct {
	logger  *slog.Logger
	want    [sha256.Size]byte
	empty   bool
	allowed []hostPort
}

// NewGuard is the guard of opts.
func NewGuard(opts GuardOptions) *Guard {
	g := &Guard{
		logger: guardLogger(opts.Logger),
		want:   sha256.Sum256([]byte(opts.Token)),
		empty:  opts.Token == "",
	}
	for _, h := range opts.AllowedHosts {
		if h = strings.TrimSpace(h); h != "" {
			g.allowed = append(g.allowed, splitHost(h, ""))
		}
	}
	return g
}

// Page applies the Host and Origin rules without asking for the token:
// for what a browser must load before it can send one (the dashboard's
// own page and assets, which carry no data).
func (g *Guard) Page(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.hostAndOrigin(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

type hostPort struct{ host, port string }

// Operator applies the Host and Origin rules and asks for the operator's
// token: every route but the page's and the health checks.
func (g *Guard) Operator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAndOrigin(w, r) {
			return
		}
		switch g.checkToken(r.Header.Get("Authorization")) {
		case tokenMissing:
			w.Header().Set("WWW-Authenticate", `Bearer realm="crewlet"`)
			g.deny(w, r, http.StatusUnauthorized, codeUnauthorized,
				"This endpoint wants Authorization: Bearer <token>. Send the node's operator token (crewlet serve prints where it is).")
			return
		case tokenWrong:
			w.Header().Set("WWW-Authenticate", `Bearer realm="crewlet", error="invalid_token"`)
			g.deny(w, r, http.StatusUnauthorized, codeUnauthorized,
				"The bearer token is not this node's operator token. Send the token crewlet serve wrote, without extra spaces.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAndOrigin refuses a request whose Host or Origin is not this
// node's, and says whether it passed.
func (g *Guard) hostAndOrigin(w http.ResponseWriter, r *http.Request) bool {
	listenPort := localPort(r)
	if !g.hostAllowed(splitHost(r.Host, "http"), listenPort) {
		g.deny(w, r, http.StatusForbidden, codeForbidden,
			"The Host header "+quote(r.Host)+" is not one this node is reached by. Use the node's address as configured, or add it to the allowed hosts.")
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, listenPort) {
		g.deny(w, r, http.StatusForbidden, codeForbidden,
			"Requests from the origin "+quote(origin)+" are refused: only pages served from this node's own allowed hosts may call it.")
		return false
	}
	return true
}

type tokenVerdict int

const (
	tokenOK tokenVerdict = iota
	tokenMissing
	tokenWrong
)

// checkToken compares in constant time: both sides are hashed first, so
// neither the content nor the length of the token leaks through timing.
func (g *Guard) checkToken(header string) tokenVerdict {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return tokenMissing
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return tokenMissing
	}
	got := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(got[:], g.want[:]) != 1 || g.empty {
		return tokenWrong
	}
	return tokenOK
}

func (g *Guard) hostAllowed(h hostPort, listenPort string) bool {
	if h.host == "" {
		return false
	}
	if isLoopbackName(h.host) && (listenPort == "" || h.port == listenPort) {
		return true
	}
	for _, a := range g.allowed {
		if a.host == h.host && (a.port == "" || a.port == h.port) {
			return true
		}
	}
	return false
}

func (g *Guard) originAllowed(origin string, listenPort string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" {
		return false
	}
	return g.hostAllowed(splitHost(u.Host, u.Scheme), listenPort)
}

func (g *Guard) deny(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	g.logger.InfoContext(r.Context(), "http_request_refused",
		slog.String("refused", code),
		slog.Int("status", status),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("host", r.Host),
		slog.String("origin", r.Header.Get("Origin")),
		slog.String("remote", r.RemoteAddr))
	writeRefusal(w, status, code, msg)
}

func writeRefusal(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"refused": code, "message": msg})
}

// guardLogger is the guard's logger. Its lines keep component=mcp, the
// component they were logged under when the guard lived beside the MCP
// handlers: a log filter written against them keeps working.
func guardLogger(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return logger.With(slog.String(engine.LogComponent, engine.ComponentMCP))
}

// splitHost lower-cases a Host value and splits off its port; a missing
// port is the scheme's default (none for an AllowedHosts entry, which
// then matches any port).
func splitHost(hp, scheme string) hostPort {
	hp = strings.ToLower(strings.TrimSpace(hp))
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), ""
	}
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return hostPort{host: host, port: port}
}

func isLoopbackName(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// localPort is the port of the socket the request arrived on, "" if unknown.
func localPort(r *http.Request) string {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return ""
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	return port
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
