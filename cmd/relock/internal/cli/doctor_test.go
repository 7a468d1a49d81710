package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/relock-go/relock/cmd/relock/internal/cli"
	"github.com/relock-go/relock/cmd/relock/internal/doctor"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

var (
	addrRE  = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	clockRE = regexp.MustCompile(`server clock [^:]*? this machine's \(± [^)]*\)`)
	// versionRE: CI installs whichever redis-server its distribution has.
	versionRE = regexp.MustCompile(`version: (redis [0-9.]+|[a-z]+ [0-9.]+ \(redis_version [0-9.]+\))`) // Redis, or another server (Valkey)
	memoryRE  = regexp.MustCompile(`used_memory is [0-9]+% of maxmemory \([0-9]+ of`)
)

// maskDoctor hides what changes from run to run or machine to machine:
// ports, clock readings, the server's version and its memory use.
func maskDoctor(res result) result {
	for _, s := range []*string{&res.stdout, &res.stderr} {
		*s = addrRE.ReplaceAllString(*s, "ADDR")
		*s = clockRE.ReplaceAllString(*s, "server clock <skew>")
		*s = versionRE.ReplaceAllString(*s, "version: redis <version>")
		*s = memoryRE.ReplaceAllString(*s, "used_memory is <n>% of maxmemory (<used> of")
	}
	return res
}

func TestDoctorExitCodeIsTheWorstSeverity(t *testing.T) {
	r := newRunner(t)
	bad := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"))
	golden(t, "doctor_misconfigured", maskDoctor(r.run("", "doctor", "--addr", bad.Addr)), cli.ExitDoctorError)

	// No eviction, but no persistence either: a warning.
	warn := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "noeviction"))
	res := r.run("", "doctor", "--addr", warn.Addr)
	if res.code != cli.ExitDoctorWarn || !strings.Contains(res.stdout, "[warn]  persistence: no persistence") {
		t.Errorf("exit %d, want %d with the persistence warning:\n%s%s", res.code, cli.ExitDoctorWarn, res.stdout, res.stderr)
	}

	// AOF always and noeviction: nothing worse than info.
	good := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "noeviction",
		"--appendonly", "yes", "--appendfsync", "always"))
	res = r.run("", "doctor", "--addr", good.Addr)
	if res.code != cli.ExitOK || strings.Contains(res.stdout, "[warn]") || strings.Contains(res.stdout, "[error]") {
		t.Errorf("exit %d, want 0 and no warning:\n%s%s", res.code, res.stdout, res.stderr)
	}

	// Nothing listens on port 1: an error found, not a crash.
	res = r.run("", "doctor", "--addr", "127.0.0.1:1", "--timeout", "3s")
	if res.code != cli.ExitDoctorError || !strings.Contains(res.stdout, "[error] connection: could not reach") {
		t.Errorf("exit %d, want %d with the connection error:\n%s%s", res.code, cli.ExitDoctorError, res.stdout, res.stderr)
	}
}

func TestDoctorJSON(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "volatile-lru"))
	res := newRunner(t).run("", "--json", "doctor", "--addr", s.Addr, "--skew", "2s")
	if res.code != cli.ExitDoctorError {
		t.Fatalf("exit %d, want %d\n%s%s", res.code, cli.ExitDoctorError, res.stdout, res.stderr)
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res.stdout)
	}
	if rep.Worst != doctor.Error {
		t.Errorf("worst %v, want error", rep.Worst)
	}
	seen := map[string]doctor.Severity{}
	for _, f := range rep.Findings {
		if f.Node != s.Addr {
			t.Errorf("finding on %q, want %q: %+v", f.Node, s.Addr, f)
		}
		seen[f.Check] = max(seen[f.Check], f.Severity)
	}
	want := map[string]doctor.Severity{
		"version": doctor.Info, "eviction": doctor.Error, "persistence": doctor.Warn,
		"replicas": doctor.Info, "clock": doctor.OK, "acl": doctor.OK,
	}
	for check, sev := range want {
		if seen[check] != sev {
			t.Errorf("%s: worst %v, want %v (%v)", check, seen[check], sev, seen)
		}
	}
}

func TestDoctorSentinel(t *testing.T) {
	_, g := redistest.StartSentinel(t)
	if g == nil {
		return
	}
	res := newRunner(t).run("", "doctor", "--sentinel", g.Sentinel.Addr, "--master", redistest.SentinelMasterName)
	for _, want := range []string{
		"[info]  sentinel: " + g.Sentinel.Addr + " names master",
		"== " + g.Master.Addr + "\n",
		"== " + g.Replica.Addr + "\n",
		"[ok]    replicas: replica of " + g.Master.Addr + ", link up",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s%s", want, res.stdout, res.stderr)
		}
	}
	if res.code != cli.ExitDoctorWarn { // persistence is off
		t.Errorf("exit %d, want %d", res.code, cli.ExitDoctorWarn)
	}
}

func TestDoctorCluster(t *testing.T) {
	env := redistest.ClusterBackend().New(t)
	if env == nil {
		return
	}
	addrs := make([]string, len(env.Cluster))
	for i, s := range env.Cluster {
		addrs[i] = s.Addr
	}
	r := newRunner(t)
	// The seeds as --cluster's value, after it, or in --addr: one meaning.
	for _, args := range [][]string{
		{"doctor", "--cluster=" + addrs[0]},
		{"doctor", "--cluster", addrs[1]},
		{"--cluster", "doctor", "--addr", strings.Join(addrs, ",")},
	} {
		res := r.run("", args...)
		if !strings.Contains(res.stdout, "[info]  cluster: 3 masters") {
			t.Errorf("%q: output lacks the 3 masters:\n%s%s", args, res.stdout, res.stderr)
		}
		for _, a := range addrs {
			if !strings.Contains(res.stdout, "== "+a+"\n") {
				t.Errorf("%q: master %s not checked:\n%s", args, a, res.stdout)
			}
		}
		if res.code != cli.ExitDoctorWarn { // persistence is off
			t.Errorf("%q: exit %d, want %d\n%s%s", args, res.code, cli.ExitDoctorWarn, res.stdout, res.stderr)
		}
	}
}

func TestDoctorUsage(t *testing.T) {
	r := newRunner(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"doctor_usage_argument", []string{"doctor", "extra"}},
		{"doctor_usage_sentinel_no_master", []string{"doctor", "--sentinel", "127.0.0.1:26379"}},
		{"doctor_usage_sentinel_cluster", []string{"doctor", "--cluster", "--sentinel", "127.0.0.1:26379", "--master", "m"}},
		{"doctor_usage_skew", []string{"doctor", "--skew", "0s"}},
		{"doctor_usage_name", []string{"doctor", "--name", "a{b"}},
		{"doctor_usage_bad_flag", []string{"doctor", "--nope"}},
		{"doctor_usage_bad_global_flag", []string{"--nope", "doctor"}},
	} {
		golden(t, tc.name, r.run("", tc.args...), cli.ExitDoctorUsage)
	}
}
