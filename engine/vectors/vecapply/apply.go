// Package vecapply is the vectors domain's apply side: its schema and
// Domain.Apply, the rows of each record written inside the applier's
// transaction. A put replaces the source's row (the stream keeps only a
// subject's newest record, so the row is the source's current value); a
// forget deletes it and notes the forgetting, so a node's in-memory index
// learns of it without reading every row again. Apply is a function of
// the records alone: it reads no other domain's rows.
package vecapply

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// Schema: one row a source with a vector, and the sources forgotten (by
// the sequence that forgot them: what an index catching up reads).
// vectors is a rowid table: its rows carry a vector blob of a kilobyte
// or more, which a WITHOUT ROWID table would spill into overflow pages
// of its primary key's B-tree.
const Schema = `
CREATE TABLE IF NOT EXISTS vectors (
	source    TEXT NOT NULL UNIQUE,
	kind      TEXT NOT NULL,
	owner     TEXT NOT NULL,
	model     TEXT NOT NULL,
	dims      INTEGER NOT NULL,
	vec       BLOB NOT NULL,
	text_hash TEXT NOT NULL,
	seq       INTEGER NOT NULL,
	at        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_seq ON vectors(seq);
CREATE TABLE IF NOT EXISTS vectors_forgotten (
	source TEXT PRIMARY KEY,
	seq    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_forgotten_seq ON vectors_forgotten(seq);
`

// Domain applies the vectors domain's records.
type Domain struct{}

var _ statelog.Domain = Domain{}

// Name is "vectors".
func (Domain) Name() engine.Domain { return vecrec.Domain }

// Schema is the domain's tables.
func (Domain) Schema() string { return Schema }

// Kinds are vecrec.Kinds.
func (Domain) Kinds() map[string]int { return vecrec.Kinds }

// Apply writes a record's row. A payload that does not parse, or a put
// whose vector is not its declared length, is moot: it applies nothing
// (the duty writes it again from the source). A kind not in Kinds never
// reaches Apply: the framework retains it for a later build.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	switch rec.Kind {
	case vecrec.KindPut:
		var p vecrec.Put
		if json.Unmarshal(rec.Payload, &p) != nil || p.Check() != nil || rec.Subject != vecrec.Subject(p.Source) {
			return nil
		}
		blob, _ := base64.StdEncoding.DecodeString(p.Vector)
		if _, err := at.Exec(ctx, tx, `INSERT INTO vectors(source, kind, owner, model, dims, vec, text_hash, seq, at) VALUES(?,?,?,?,?,?,?,?,?)
			ON CONFLICT(source) DO UPDATE SET kind = excluded.kind, owner = excluded.owner, model = excluded.model, dims = excluded.dims,
			vec = excluded.vec, text_hash = excluded.text_hash, seq = excluded.seq, at = excluded.at`,
			p.Source, p.Kind, p.Owner, p.Model, p.Dims, blob, p.TextHash, at.Seq, at.Time.UnixNano()); err != nil {
			return err
		}
		_, err := at.Exec(ctx, tx, `DELETE FROM vectors_forgotten WHERE source = ?`, p.Source)
		return err
	case vecrec.KindForget:
		var f vecrec.Forget
		if json.Unmarshal(rec.Payload, &f) != nil || f.Source == "" || rec.Subject != vecrec.Subject(f.Source) {
			return nil
		}
		if _, err := at.Exec(ctx, tx, `DELETE FROM vectors WHERE source = ?`, f.Source); err != nil {
			return err
		}
		_, err := at.Exec(ctx, tx, `INSERT INTO vectors_forgotten(source, seq) VALUES(?,?) ON CONFLICT(source) DO UPDATE SET seq = excluded.seq`, f.Source, at.Seq)
		return err
	}
	return nil
}
