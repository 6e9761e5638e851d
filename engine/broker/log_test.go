package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// TestAsyncErrorsAreLogged: an error nats.go reports outside any call (a
// slow consumer, made by a subscription whose handler holds while its
// pending limit is one message) reaches the node's logger under
// component broker, instead of nats.go's default writer, which prints
// it raw on stderr.
func TestAsyncErrorsAreLogged(t *testing.T) {
	rec := enginetest.NewRecorder()
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: t.TempDir(), Sync: broker.Sync{Always: true}, Logger: rec.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	release := make(chan struct{})
	defer close(release)
	sub, err := b.Conn.Subscribe("slow", func(*nats.Msg) { <-release })
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(1, 1<<20); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := b.Conn.Publish("slow", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		for _, l := range rec.Lines("nats_async_error") {
			if l.Attrs[engine.LogComponent] == engine.ComponentBroker && l.Attrs["subject"] == "slow" && l.Attrs[engine.LogErr] != nil {
				return nil
			}
		}
		return fmt.Errorf("no nats_async_error line for the slow consumer")
	})
}
