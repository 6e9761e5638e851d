package vecapply_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog/applytest"
	"github.com/crewlet/crewlet/engine/vectors/vecapply"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// TestScripts runs the apply side's scripts (testdata/*.txt) through
// applytest: vectors records on an in-memory log applied on real SQLite
// files, the rows after every command held to the same records replayed
// from scratch. Rewrite the expected output with -rewrite.
//
// Record lines: `put source= of= [owner=] [model=] [dims=] [vec=a,b,…] [hash=]`
// (vectors.put; dims defaults to the vector's length, so dims= different
// from it makes a put whose vector is not its length), `forget source=`
// (vectors.forget), `put-at source= at=` (a put on another source's
// subject).
func TestScripts(t *testing.T) {
	applytest.Run(t, "testdata", applytest.Domain{Domain: vecapply.Domain{}, Record: vectorsRecord, Tables: []applytest.Table{
		{Name: "vectors", Order: "source", Print: "source, kind, owner, model, dims, hex(vec) AS vec, text_hash, seq"},
		{Name: "vectors_forgotten", Order: "source"},
	}})
}

func vectorsRecord(verb string, a applytest.Args) (*record.Record, error) {
	src := a.Str("source")
	switch verb {
	case "put", "put-at":
		var v []float32
		for _, s := range a.Strs("vec") {
			f, err := strconv.ParseFloat(s, 32)
			if err != nil {
				return nil, err
			}
			v = append(v, float32(f))
		}
		dims := len(v)
		if a.Has("dims") {
			n, err := a.Int("dims")
			if err != nil {
				return nil, err
			}
			dims = int(n)
		}
		model := a.Str("model")
		if model == "" {
			model = "m1"
		}
		subject := vecrec.Subject(src)
		if verb == "put-at" {
			subject = vecrec.Subject(a.Str("at"))
		}
		return applytest.Make(vecrec.KindPut, subject, vecrec.Scope(src), vecrec.Put{Source: src, Kind: a.Str("of"), Owner: a.Str("owner"),
			Model: model, Dims: dims, Vector: vecrec.EncodeVector(v), TextHash: a.Str("hash")})
	case "forget":
		return applytest.Make(vecrec.KindForget, vecrec.Subject(src), vecrec.Scope(src), vecrec.Forget{Source: src})
	}
	return nil, fmt.Errorf("no record %q", verb)
}
