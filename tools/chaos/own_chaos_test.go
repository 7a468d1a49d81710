//go:build chaos

package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A server whose port another process answers (a run beside this one
// took it) is refused, and the run marked invalid, instead of run
// against.
func TestForeignServerOnOurPortInvalidatesTheRun(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	foreign := &proc{name: "foreign", bin: bin, dir: dir, log: filepath.Join(dir, "foreign.log"),
		args: []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no"}}
	if _, err := foreign.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(foreign.kill)
	ours := &proc{name: "ours", bin: "sleep", args: []string{"30"}, dir: dir, log: filepath.Join(dir, "ours.log")}
	if _, err := ours.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ours.kill)
	r := &runner{}
	s := &server{id: "t/m0", addr: "127.0.0.1:" + strconv.Itoa(port), port: port, proc: ours}
	if err := r.waitOwn(s); !errors.Is(err, errForeign) {
		t.Fatalf("waitOwn: %v, want errForeign", err)
	}
	if !errors.Is(r.invalid, errForeign) {
		t.Fatalf("run not marked invalid: %v", r.invalid)
	}
	s.proc = foreign
	r = &runner{}
	if err := r.waitOwn(s); err != nil || r.invalid != nil {
		t.Fatalf("its own process answering: %v, invalid %v", err, r.invalid)
	}
}
