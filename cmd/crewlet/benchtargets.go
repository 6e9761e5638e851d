package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crewlet/crewlet/internal/loopback"
	"github.com/crewlet/crewlet/internal/token"
)

// The targets `crewlet bench` starts itself in its scratch directory: a
// Crewlet node or a fleet of them (this binary's `crewlet serve`), and an
// rqlite node or cluster from a binary the user built. Every process is
// started before any is waited for: a clustered node is not ready until
// its peers are up.

// startBenchFleet runs n of this binary's `crewlet serve` on loopback, each
// with its data under dir; more than one form a fleet whose embedded
// brokers are clustered and whose logs have n replicas. It waits for
// every /readyz and returns the processes, the nodes' base URLs and their
// operator token. With pprof, the nodes serve their runtime profiles;
// embedder is their embedder.provider.
func startBenchFleet(ctx context.Context, dir string, n int, pprof bool, embedder string) (g childGroup, urls []string, tok string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, "", err
	}
	ports, err := loopback.Ports(2 * n)
	if err != nil {
		return nil, nil, "", err
	}
	https, listens := ports[:n], ports[n:]
	var routes []string
	if n > 1 {
		for _, p := range listens {
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
		// One token for the whole fleet, as an operator would configure.
		raw := make([]byte, 16)
		if _, err := rand.Read(raw); err != nil {
			return nil, nil, "", err
		}
		tok = hex.EncodeToString(raw)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%d", i+1)
		nodeDir := filepath.Join(dir, name)
		url := fmt.Sprintf("http://127.0.0.1:%d", https[i])
		args := []string{"serve", "--data", filepath.Join(nodeDir, "data"), "--http", fmt.Sprintf("127.0.0.1:%d", https[i]), "--log-format", "json"}
		if pprof {
			args = append(args, "--pprof")
		}
		cfg := filepath.Join(nodeDir, "crewlet.yaml")
		if err := writeBenchConfig(cfg, name, tok, n, listens[i], routes, embedder); err != nil {
			g.stop()
			return nil, nil, "", err
		}
		args = append(args, "--config", cfg)
		if err := g.start(nodeDir, url+"/readyz", exe, args...); err != nil {
			g.stop()
			return nil, nil, "", err
		}
		urls = append(urls, url)
	}
	if err := g.waitReady(ctx); err != nil {
		return nil, nil, "", err
	}
	if n == 1 {
		b, err := os.ReadFile(filepath.Join(dir, "n1", "data", token.FileName))
		if err != nil {
			g.stop()
			return nil, nil, "", err
		}
		tok = strings.TrimSpace(string(b))
	}
	return g, urls, tok, nil
}

// writeBenchConfig writes one node's configuration: its embedder and, in
// a fleet (replicas above one), its name, the fleet's operator token, its
// logs' replicas and its broker's cluster.
func writeBenchConfig(path, name, tok string, replicas, listen int, routes []string, embedder string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	yaml := fmt.Sprintf("embedder:\n  provider: %s\n", embedder)
	if replicas > 1 {
		yaml += fmt.Sprintf(`node:
  name: %s
operator:
  token: %q
stream:
  replicas: %d
  cluster:
    name: crewlet-bench
    listen: 127.0.0.1:%d
    routes: [%s]
`, name, tok, replicas, listen, strings.Join(routes, ", "))
	}
	return os.WriteFile(path, []byte(yaml), 0o600)
}

// startRqliteCluster runs n rqlite nodes from the binary at bin on
// loopback, each with its data under dir, more than one joined as a
// cluster, and waits for every /readyz; it returns the processes and the
// nodes' base URLs.
func startRqliteCluster(ctx context.Context, bin, dir string, n int) (g childGroup, urls []string, err error) {
	ports, err := loopback.Ports(2 * n)
	if err != nil {
		return nil, nil, err
	}
	https, rafts := ports[:n], ports[n:]
	var join []string
	for _, p := range rafts {
		join = append(join, fmt.Sprintf("127.0.0.1:%d", p))
	}
	for i := 0; i < n; i++ {
		nodeDir := filepath.Join(dir, fmt.Sprintf("r%d", i+1))
		url := fmt.Sprintf("http://127.0.0.1:%d", https[i])
		args := []string{"-node-id", fmt.Sprint(i + 1), "-http-addr", fmt.Sprintf("127.0.0.1:%d", https[i]), "-raft-addr", join[i]}
		if n > 1 {
			args = append(args, "-bootstrap-expect", fmt.Sprint(n), "-join", strings.Join(join, ","))
		}
		if err := g.start(nodeDir, url+"/readyz", bin, append(args, filepath.Join(nodeDir, "data"))...); err != nil {
			g.stop()
			return nil, nil, err
		}
		urls = append(urls, url)
	}
	if err := g.waitReady(ctx); err != nil {
		return nil, nil, err
	}
	return g, urls, nil
}

// childGroup is the server processes one target is made of.
type childGroup []*child

// child is one server process, its output in dir/out.log, ready once its
// ready URL answers 200.
type child struct {
	cmd    *exec.Cmd
	log    *os.File
	ready  string
	exited chan struct{}
}

// start starts a process without waiting for it.
func (g *childGroup) start(dir, ready, bin string, args ...string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "out.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	c := &child{cmd: cmd, log: logf, ready: ready, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	*g = append(*g, c)
	return nil
}

// waitReady waits until every process answers ready (two minutes at most,
// the broker's own readiness wait), and stops them all when one exits or
// does not.
func (g childGroup) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, c := range g {
		if err := c.waitReady(ctx, deadline); err != nil {
			g.stop()
			return err
		}
	}
	return nil
}

func (c *child) waitReady(ctx context.Context, deadline time.Time) error {
	name := filepath.Base(c.cmd.Path)
	for {
		resp, err := http.Get(c.ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.exited:
			out, _ := os.ReadFile(c.log.Name())
			return fmt.Errorf("%s exited before it was ready:\n%s", name, out)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New(name + " was not ready within two minutes; its log is in " + c.log.Name())
		}
	}
}

// stop interrupts every process at once and waits for each (killing one
// that has not exited 30 s later).
func (g childGroup) stop() {
	for _, c := range g {
		_ = c.cmd.Process.Signal(os.Interrupt)
	}
	for _, c := range g {
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		c.log.Close()
	}
}

// pids are the group's processes.
func (g childGroup) pids() []int {
	out := make([]int, 0, len(g))
	for _, c := range g {
		out = append(out, c.cmd.Process.Pid)
	}
	return out
}

// nodesWord says "1 node" or "3 nodes".
func nodesWord(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
