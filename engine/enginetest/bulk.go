package enginetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// PublishCreates puts count create_work_item records for project ENG
// (which must exist) on the tracker log through js, numbered from first,
// asynchronously and without waiting on any applier: how a benchmark
// builds a large history quickly.
func PublishCreates(tb testing.TB, js jetstream.JetStream, first, count int) {
	tb.Helper()
	for j := first; j < first+count; j++ {
		op, _ := ledger.MintFor(time.Now(), "create_work_item", "ENG", "")
		payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("wi_%d", j), "project": "ENG", "number": j, "title": fmt.Sprintf("item %d of the benchmark", j),
			"description": "a description long enough to look like one a person wrote", "status": "open", "assignee": ""})
		data, _ := record.Encode(&record.Record{Kind: trackrec.KindCreateWorkItem, Version: 1, OpID: op.String(), Writer: "n1", Generation: 1,
			Subject: "crewlet.tracker.project.ENG", Payload: payload})
		if _, err := js.PublishAsync("crewlet.tracker.project.ENG", data, jetstream.WithMsgID(op.String())); err != nil {
			tb.Fatal(err)
		}
		if j%4096 == 0 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
}
