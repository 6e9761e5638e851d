// Package exampletest is a throwaway domain, notes, kept to show (and
// test, so the claim cannot rot) that a domain plugs in through its own
// package and one registry line: its engine side (Spec: the stream, the
// schema, a record kind and its format version, the service), one write
// tool and one read tool, and one REST read route. Tests add it with
// domains.Of(exampletest.Spec, exampletest.Toolset). It is for tests
// only.
package exampletest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// The domain's names.
const (
	Name   engine.Domain = "notes"
	Stream               = "CREWLET_NOTES_LOG"
	// KindPut sets a note's text.
	KindPut = "notes.put"
	// PutVersion is KindPut's format version: the lowest build that can
	// apply it whole.
	PutVersion = 1
)

// Spec is the notes domain as a node runs it: a small log of its own.
var Spec = statelog.Spec{
	Domain:  Domain{},
	Stream:  Stream,
	Ask:     capacity.Fixed(64 << 20),
	Service: func(r statelog.DomainReplica, clock engine.Clock) any { return &Service{replica: r, clock: clock} },
}

const schema = `CREATE TABLE IF NOT EXISTS example_notes (
	key     TEXT PRIMARY KEY,
	text    TEXT NOT NULL,
	version INTEGER NOT NULL
) WITHOUT ROWID;`

// Domain applies the notes' records.
type Domain struct{}

// Name is "notes".
func (Domain) Name() engine.Domain { return Name }

// Schema is the notes table.
func (Domain) Schema() string { return schema }

// Kinds is the one record kind at its format version: a build without
// this domain consumes no notes log, so version 1 holds nothing back.
func (Domain) Kinds() map[string]int { return map[string]int{KindPut: PutVersion} }

type put struct {
	Key  string `json:"key"`
	Text string `json:"text"`
}

// Apply writes a put's row; a kind it does not know applies nothing.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	var p put
	if rec.Kind != KindPut || json.Unmarshal(rec.Payload, &p) != nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO example_notes(key, text, version) VALUES(?,?,?)
		ON CONFLICT(key) DO UPDATE SET text = excluded.text, version = excluded.version`, p.Key, p.Text, at.Seq)
	return err
}

// Note is one note.
type Note struct {
	Key     string `json:"key"`
	Text    string `json:"text"`
	Version uint64 `json:"version"`
}

// NoteWrite answers a put.
type NoteWrite struct {
	engine.WriteResult
	Note *Note `json:"note,omitempty"`
}

// NoteRead answers a get.
type NoteRead struct {
	engine.ReadInfo
	Note Note `json:"note"`
}

// Service is the notes' API: what its tools and its route call.
type Service struct {
	replica statelog.DomainReplica
	clock   engine.Clock
}

// Put sets the note at key to text.
func (s *Service) Put(ctx context.Context, w engine.WriteOptions, key, text string) (NoteWrite, error) {
	op, err := statelog.OpFor(s.clock.Now(), w, "put", key)
	if err != nil {
		return NoteWrite{}, err
	}
	wr, err := s.replica.Write(ctx, op, func(context.Context, *sql.Tx) (*statelog.Proposal, error) {
		return &statelog.Proposal{Kind: KindPut, Version: PutVersion, Subject: statelog.SubjectPrefix(Name) + key,
			Scope: []string{"note:" + key}, Payload: put{Key: key, Text: text}}, nil
	})
	out := NoteWrite{WriteResult: wr.WriteResult}
	if err == nil && wr.Outcome == engine.Applied {
		got, rerr := s.Get(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, key)
		out.Note = &got.Note
		err = rerr
	}
	return out, err
}

// Get reads the note at key.
func (s *Service) Get(ctx context.Context, r engine.ReadOptions, key string) (NoteRead, error) {
	var out NoteRead
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT key, text, version FROM example_notes WHERE key = ?`, key).Scan(&out.Note.Key, &out.Note.Text, &out.Note.Version)
		if errors.Is(err, sql.ErrNoRows) {
			return engine.Refuse(engine.CodeNotFound, "there is no note %q; put_note writes one.", key)
		}
		return err
	})
	out.ReadInfo = info
	return out, err
}

// Routes is GET /api/v1/notes/{key}, the read path's answer of get_note.
func (s *Service) Routes() []rest.Route {
	return []rest.Route{{Method: http.MethodGet, Pattern: "/api/v1/notes/{key}", Grammar: true, Serve: func(ctx context.Context, q *rest.Query) (any, error) {
		return s.Get(ctx, q.Read, q.Path("key"))
	}}}
}
