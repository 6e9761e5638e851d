package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnectExternal connects to an external NATS cluster (stream.type:
// nats): the node runs no broker, so the returned Embedded has no Server.
// Its sync setting belongs to that cluster's operator and cannot be read
// back from a client; `crewlet validate` says so.
func ConnectExternal(ctx context.Context, urls []string, name string, log *slog.Logger) (*Embedded, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("broker: stream.urls is empty; stream.type nats needs the servers' URLs")
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name(name), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(false), AsyncErrors(log))
	if err != nil {
		return nil, fmt.Errorf("broker: connect to stream.urls %s: %w", strings.Join(urls, ","), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	// A server without JetStream would fail every append; say so at boot.
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("broker: the NATS servers at %s answer no JetStream account info (%w); enable JetStream on them", strings.Join(urls, ","), err)
	}
	return &Embedded{Conn: nc, JS: js}, nil
}
