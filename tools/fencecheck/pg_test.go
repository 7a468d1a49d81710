package fencecheck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// pg is the PostgreSQL server the package's tests share, started on first
// use and stopped by TestMain.
var pg struct {
	once sync.Once
	dsn  string
	err  error // why there is none
	stop func()
}

// postgresDSN returns the shared server's DSN. Without PostgreSQL's
// binaries the test fails in CI (CI=true) and is skipped, loudly, elsewhere.
func postgresDSN(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() { pg.dsn, pg.stop, pg.err = startPostgres() })
	if pg.err == nil {
		return pg.dsn
	}
	if errors.Is(pg.err, errNoPostgres) && !inCI() {
		t.Skipf("SKIPPING: %v; run `make test` to install it — these tests are NOT counted as passing", pg.err)
	}
	t.Fatalf("PostgreSQL: %v (CI=%s: failing instead of skipping; `make test` installs it as root)", pg.err, os.Getenv("CI"))
	return ""
}

func stopPostgres() {
	if pg.stop != nil {
		pg.stop()
	}
}

var errNoPostgres = errors.New("PostgreSQL's initdb and postgres not found (Debian package postgresql)")

func inCI() bool {
	ci, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("CI")))
	return err == nil && ci
}

// postgresBin finds the directory of initdb and postgres: the newest
// /usr/lib/postgresql/*/bin, else PATH.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errNoPostgres
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// startPostgres runs initdb and postgres in a new temporary directory on
// a free loopback port, as the user "postgres" when we are root (the
// server refuses to run as root).
func startPostgres() (dsn string, stop func(), err error) {
	bin, err := postgresBin()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "fencecheck-pg-")
	if err != nil {
		return "", nil, err
	}
	cred, err := credential(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.Dir, initdb.SysProcAttr = dir, &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	logf, _ := os.Create(filepath.Join(dir, "postgres.log"))
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	srv.Dir, srv.Stdout, srv.Stderr = dir, logf, logf
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("postgres: %v", err)
	}
	stop = func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
		logf.Close()
		os.RemoveAll(dir)
	}
	dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitReady(dsn, 30*time.Second); err != nil {
		stop()
		return "", nil, err
	}
	return dsn, stop, nil
}

// credential chowns dir to the user "postgres" and returns that user's
// credential when we are root; nil (run as ourselves) otherwise.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("we are root and PostgreSQL refuses to run as root, but there is no user postgres: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(dsn string, within time.Duration) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
