package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// Domain names a replicated domain. Each domain owns one ordered stream.
type Domain string

// The domains whose names the contract fixes. A domain is a plug-in
// (statelog.Spec): nothing in the framework switches on these names.
const (
	DomainTracker Domain = "tracker"
	DomainPages   Domain = "pages"
)

// Stream names, fixed by the contract (DESIGN.md).
const (
	StreamTracker = "CREWLET_TRACKER_LOG"
	StreamPages   = "CREWLET_PAGES_LOG"
)

// Position is a point on one domain's log: the stream, the generation the
// node's rows are keyed to, and the stream sequence. Inside an answer it is
// the JSON object; as a parameter it is the token <stream>@<gen>:<seq>.
type Position struct {
	Stream     string `json:"stream"`
	Generation uint64 `json:"generation"`
	Seq        uint64 `json:"seq"`
}

// Token renders the position as <stream>@<generation>:<sequence>.
func (p Position) Token() string {
	return p.Stream + "@" + strconv.FormatUint(p.Generation, 10) + ":" + strconv.FormatUint(p.Seq, 10)
}

// String is the token, so a position prints the way a caller pastes it back.
func (p Position) String() string { return p.Token() }

// IsZero reports whether the position names nothing.
func (p Position) IsZero() bool { return p == Position{} }

// ParsePosition parses a token strictly: a stream name of upper-case
// letters, digits and underscores, '@', a generation of at least 1, ':',
// and a sequence, both decimal without sign, leading zeros or spaces.
func ParsePosition(token string) (Position, error) {
	at := strings.IndexByte(token, '@')
	if at <= 0 {
		return Position{}, fmt.Errorf("position %q is not <stream>@<generation>:<sequence>", token)
	}
	stream, rest := token[:at], token[at+1:]
	for _, c := range stream {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return Position{}, fmt.Errorf("position %q: stream name %q holds %q", token, stream, c)
		}
	}
	colon := strings.IndexByte(rest, ':')
	if colon < 0 {
		return Position{}, fmt.Errorf("position %q is not <stream>@<generation>:<sequence>", token)
	}
	gen, err := parseDecimal(rest[:colon])
	if err != nil || gen == 0 {
		return Position{}, fmt.Errorf("position %q: generation %q is not a number of at least 1", token, rest[:colon])
	}
	seq, err := parseDecimal(rest[colon+1:])
	if err != nil {
		return Position{}, fmt.Errorf("position %q: sequence %q is not a number", token, rest[colon+1:])
	}
	return Position{Stream: stream, Generation: gen, Seq: seq}, nil
}

func parseDecimal(s string) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("bad decimal %q", s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad decimal %q", s)
		}
	}
	return strconv.ParseUint(s, 10, 64)
}
