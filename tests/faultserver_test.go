package tests

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gmysql "gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/slotted-go/slotted"
)

// Fault tests need a server of their own: they freeze it (SIGSTOP of its
// processes) and kill its connections, which must never happen to a server
// other tests or people share. faultServer starts a private MariaDB or
// PostgreSQL on loopback for one test and stops it at the test's end.
//
// Environment:
//   SLOTTED_FAULT_DIR         where the data directories go (<dir>-mysql, <dir>-pg); default
//                             $TMPDIR/slotted-fault-<uid>-*. An initialized one found there is reused.
//   SLOTTED_FAULT_MYSQL_PORT  the private MariaDB's port; default a free one.
//   SLOTTED_FAULT_PG_PORT     the private PostgreSQL's port; default a free one.
//   SLOTTED_REQUIRE_FAULTS=1  fail, rather than skip, when a server's binaries are missing.

type faultServer struct {
	name   string // dbMySQL or dbPostgres
	dir    string
	port   int
	cmd    *exec.Cmd
	admin  *sql.DB // a connection pool of the test's own, never killed by kill()
	db     string  // the test's database
	args   []string
	cred   *syscall.Credential
	exited chan struct{}

	mu     sync.Mutex
	frozen bool
}

// testEachFaultDB runs fn on a private MariaDB and a private PostgreSQL,
// each with a fresh database, skipping a server whose binaries are missing.
// A run covers a server's faults when it covers the server (its DSN is set,
// see dbNames), so a SQLite-only run starts none.
func testEachFaultDB(t *testing.T, fn func(t *testing.T, srv *faultServer)) {
	for _, name := range dbNames(t) {
		if name == dbSQLite {
			continue
		}
		t.Run(name, func(t *testing.T) {
			fn(t, startFaultServer(t, name))
		})
	}
}

func faultSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("SLOTTED_REQUIRE_FAULTS") == "1" {
		t.Fatalf("SLOTTED_REQUIRE_FAULTS=1: "+format, args...)
	}
	t.Skipf(format, args...)
}

func faultPort(t *testing.T, env string) int {
	if v := os.Getenv(env); v != "" {
		p, err := strconv.Atoi(v)
		require.NoError(t, err, env)
		return p
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func faultDir(t *testing.T, suffix string) string {
	if base := os.Getenv("SLOTTED_FAULT_DIR"); base != "" {
		return base + "-" + suffix
	}
	// A fixed place, so that the data directory initialized by the first
	// test is reused by the next ones and by later runs; but only one process
	// at a time may use it (two test binaries would start servers on one
	// data directory and kill each other's): a process that finds it locked
	// by another gets a directory of its own, removed after the test.
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("slotted-fault-%d-%s", os.Getuid(), suffix))
	if faultLock(dir) {
		return dir
	}
	own := fmt.Sprintf("%s-%d", dir, os.Getpid())
	t.Cleanup(func() { _ = os.RemoveAll(own) })
	return own
}

var faultLocks sync.Map // dir -> *os.File, held (and locked) until the process exits

// faultLock takes dir's lock file for this process, reporting whether it has it.
func faultLock(dir string) bool {
	if _, ok := faultLocks.Load(dir); ok {
		return true
	}
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	if _, loaded := faultLocks.LoadOrStore(dir, f); loaded {
		_ = f.Close() // another test of this process took it meanwhile: the process holds it
	}
	return true
}

// lookBin finds a server binary on PATH or in the places Debian puts them.
func lookBin(name string, dirs ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range dirs {
		if m, _ := filepath.Glob(filepath.Join(d, name)); len(m) > 0 {
			return m[len(m)-1]
		}
	}
	return ""
}

// asUser returns the uid/gid a server must run as: initdb and postgres refuse
// root, and mariadbd wants a named user then.
func asUser(t *testing.T, name string) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		faultSkip(t, "running as root and there is no %s user: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func chownAll(t *testing.T, dir string, cred *syscall.Credential) {
	if cred == nil {
		return
	}
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	}))
	// Parents must be traversable by the server's user.
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(d, fi.Mode().Perm()|0o011)
		}
	}
}

func runQuiet(t *testing.T, cred *syscall.Credential, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
}

// killStale stops a server left running on dir by an earlier run that died.
func killStale(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(filepath.Dir(pidFile))) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = os.Remove(pidFile)
}

func startFaultServer(t *testing.T, name string) *faultServer {
	t.Helper()
	s := &faultServer{name: name}
	var args []string
	var cred *syscall.Credential
	switch name {
	case dbMySQL:
		mariadbd := lookBin("mariadbd", "/usr/sbin")
		install := lookBin("mariadb-install-db", "/usr/bin")
		if mariadbd == "" || install == "" {
			faultSkip(t, "mariadbd or mariadb-install-db not found")
		}
		s.dir, s.port = faultDir(t, "mysql"), faultPort(t, "SLOTTED_FAULT_MYSQL_PORT")
		cred = asUser(t, "mysql")
		data := filepath.Join(s.dir, "data")
		killStale(filepath.Join(s.dir, "mysqld.pid"))
		if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
			require.NoError(t, os.RemoveAll(s.dir))
			require.NoError(t, os.MkdirAll(filepath.Join(s.dir, "tmp"), 0o755))
			chownAll(t, s.dir, cred)
			runQuiet(t, cred, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
				"--skip-test-db", "--skip-name-resolve")
		}
		args = []string{mariadbd, "--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(s.port),
			"--bind-address=127.0.0.1", "--socket=" + filepath.Join(s.dir, "mysqld.sock"),
			"--pid-file=" + filepath.Join(s.dir, "mysqld.pid"), "--log-error=" + filepath.Join(s.dir, "error.log"),
			"--tmpdir=" + filepath.Join(s.dir, "tmp"), "--skip-name-resolve", "--skip-grant-tables", "--skip-log-bin",
			"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=32M", "--innodb-flush-log-at-trx-commit=2",
			"--max-connections=500"}
	case dbPostgres:
		pgBin := lookBin("postgres", "/usr/lib/postgresql/*/bin")
		initdb := lookBin("initdb", "/usr/lib/postgresql/*/bin")
		if pgBin == "" || initdb == "" {
			faultSkip(t, "postgres or initdb not found")
		}
		s.dir, s.port = faultDir(t, "pg"), faultPort(t, "SLOTTED_FAULT_PG_PORT")
		cred = asUser(t, "postgres")
		killStale(filepath.Join(s.dir, "postmaster.pid"))
		if _, err := os.Stat(filepath.Join(s.dir, "PG_VERSION")); err != nil {
			require.NoError(t, os.RemoveAll(s.dir))
			require.NoError(t, os.MkdirAll(s.dir, 0o700))
			chownAll(t, s.dir, cred)
			runQuiet(t, cred, initdb, "-D", s.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
		}
		args = []string{pgBin, "-D", s.dir, "-p", strconv.Itoa(s.port), "-h", "127.0.0.1", "-k", s.dir,
			"-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB"}
	default:
		t.Fatalf("no fault server for %s", name)
	}
	s.args, s.cred = args, cred
	s.launch(t)
	t.Cleanup(s.stop)
	s.admin = s.open(t, "")
	s.waitReady(t)
	s.db = fmt.Sprintf("f%d", time.Now().UnixNano())
	_, err := s.admin.Exec("CREATE DATABASE " + s.db)
	require.NoError(t, err)
	return s
}

// launch starts the server process.
func (s *faultServer) launch(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a ^C to the test does not reach it, and stop ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
}

// waitReady waits until the server answers, for up to 60 s.
func (s *faultServer) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := s.admin.Ping()
		if err == nil {
			return
		}
		select {
		case <-s.exited:
			t.Fatalf("%s exited while starting (logs in %s): %v", s.name, s.dir, err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "%s did not answer within 60 s: %v", s.name, err)
		time.Sleep(100 * time.Millisecond)
	}
}

// crashRestart kills the server hard (SIGKILL to all its processes: crash
// recovery on the next start) and starts it again on the same data, waiting
// until it answers. Clients see their connections reset and refused
// meanwhile.
func (s *faultServer) crashRestart(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	// PostgreSQL's backends each run in a session of their own: signal them one by one.
	pids, exited := s.pids(), s.exited
	s.mu.Unlock()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-exited
	// A new postmaster refuses to start while an old backend still holds the shared memory.
	for _, pid := range pids[1:] {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := bytes.LastIndexByte(stat, ')'); err != nil || (i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z') {
				break
			}
		}
	}
	s.launch(t)
	s.waitReady(t)
}

// open opens a database/sql pool on the server's database db ("" for the
// server's default).
func (s *faultServer) open(t *testing.T, db string) *sql.DB {
	driverName, dsn := "mysql", ""
	if s.name == dbPostgres {
		if db == "" {
			db = "postgres"
		}
		driverName, dsn = "pgx", s.pgDSN(db)
	} else {
		dsn = s.mysqlDSN(db)
	}
	sqlDB, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(4)
	t.Cleanup(func() { _ = sqlDB.Close() })
	return sqlDB
}

func (s *faultServer) mysqlDSN(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?parseTime=true&timeout=5s", s.port, db)
}

func (s *faultServer) pgDSN(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable connect_timeout=5", s.port, db)
}

// pids lists the server's processes: mariadbd, or the postmaster and its
// backends and workers.
func (s *faultServer) pids() []int {
	root := s.cmd.Process.Pid // under mu
	pids := []int{root}
	if s.name != dbPostgres {
		return pids
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(root) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// freeze stops every process of the server (SIGSTOP) for d, then resumes
// them; it returns at once. The server keeps its connections open and
// answers nothing meanwhile: a stalled disk or VM as clients see it. The
// returned channel closes when the server has resumed.
func (s *faultServer) freeze(t *testing.T, d time.Duration) <-chan struct{} {
	s.mu.Lock()
	s.frozen = true
	pids := s.pids()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	// kill returns before the signal takes effect: a COMMIT sent meanwhile
	// could still be answered. Wait until every thread is stopped.
	for _, pid := range pids {
		waitStopped(pid)
	}
	s.mu.Unlock()
	resumed := make(chan struct{})
	thaw := sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		s.frozen = false
		close(resumed)
	})
	time.AfterFunc(d, thaw)
	t.Cleanup(thaw)
	return resumed
}

// waitStopped waits (up to 1 s) until every thread of pid is in state T.
func waitStopped(pid int) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return // gone
		}
		running := false
		for _, task := range tasks {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue
			}
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] != 'T' && stat[i+2] != 't' {
				running = true
				break
			}
		}
		if !running {
			return
		}
	}
}

// kill ends the server side of every client connection but the admin pool's
// (KILL on MariaDB, pg_terminate_backend on PostgreSQL), returning how many.
// Connections whose statements are in flight get an error mid-statement.
func (s *faultServer) kill(ctx context.Context) (int, error) {
	if s.name == dbPostgres {
		var n int
		err := s.admin.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend') k`, s.db).Scan(&n)
		return n, err
	}
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT id FROM information_schema.processlist
		WHERE db = ? AND id <> CONNECTION_ID() AND command <> 'Killed'`, s.db)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	n := 0
	for _, id := range ids {
		if _, err := conn.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10)); err == nil {
			n++
		} else if !strings.Contains(err.Error(), "1094") { // 1094: unknown thread, it ended meanwhile
			return n, err
		}
	}
	return n, nil
}

// stop ends the server: resumed if frozen, SIGTERM, SIGKILL after 30 s.
func (s *faultServer) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	if s.admin != nil {
		_ = s.admin.Close()
	}
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
}

// errIsContext reports whether err is a context's end.
func errIsContext(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// hookConnector opens the server's driver connections wrapped so that a test
// can act at chosen points of the wire protocol: onCommit runs just before a
// transaction's COMMIT is sent, onExec around a statement, prepared or not
// (before it is sent: after=false; once it answered: after=true). Any may be nil.
type hookConnector struct {
	drv       driver.Driver
	dsn       string
	onCommit  func()
	onExec    func(query string, after bool, err error)
	loseReply func(query string) bool // with onExec set: throw this successful statement's answer away
	// loseCommit: throw this successful COMMIT's answer away (the caller gets an EOF error).
	loseCommit func() bool
}

func (c *hookConnector) Connect(context.Context) (driver.Conn, error) {
	cn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &hookConn{Conn: cn, c: c}, nil
}

func (c *hookConnector) Driver() driver.Driver { return c.drv }

// hookedGorm opens a gorm pool on the test's database through a hookConnector
// (returned so the test can set its hooks before any call), with the plugin
// registered with cfg and the test models migrated.
func (s *faultServer) hookedGorm(t *testing.T, cfg slotted.Config) (*gorm.DB, *hookConnector) {
	t.Helper()
	driverName, dsn := "mysql", s.mysqlDSN(s.db)
	if s.name == dbPostgres {
		driverName, dsn = "pgx", s.pgDSN(s.db)
	}
	probe, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	hc := &hookConnector{drv: probe.Driver(), dsn: dsn}
	_ = probe.Close()
	sqlDB := sql.OpenDB(hc)
	t.Cleanup(func() { _ = sqlDB.Close() })
	var d gorm.Dialector
	if s.name == dbPostgres {
		d = postgres.New(postgres.Config{Conn: sqlDB})
	} else {
		d = gmysql.New(gmysql.Config{Conn: sqlDB})
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.Use(slotted.New(cfg)))
	require.NoError(t, db.AutoMigrate(testModels...))
	return db, hc
}

type hookConn struct {
	driver.Conn
	c      *hookConnector
	broken atomic.Bool
}

type hookTx struct {
	driver.Tx
	c *hookConnector
}

func (tx hookTx) Commit() error {
	if tx.c.onCommit != nil {
		tx.c.onCommit()
	}
	err := tx.Tx.Commit()
	if err == nil && tx.c.loseCommit != nil && tx.c.loseCommit() {
		return errReplyLost
	}
	return err
}

func (cn *hookConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := cn.Conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errors.New("hookConn: the driver has no BeginTx")
	}
	tx, err := b.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return hookTx{tx, cn.c}, nil
}

func (cn *hookConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := cn.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = cn.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &hookStmt{Stmt: st, cn: cn, query: query}, nil
}

// hookStmt is a prepared statement of a hookConn: its executions go through onExec too.
type hookStmt struct {
	driver.Stmt
	cn    *hookConn
	query string
}

func (st *hookStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := st.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("hookStmt: the driver's statement has no ExecContext")
	}
	return st.cn.exec(st.query, func() (driver.Result, error) { return e.ExecContext(ctx, args) })
}

func (st *hookStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := st.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("hookStmt: the driver's statement has no QueryContext")
	}
	return q.QueryContext(ctx, args)
}

// exec runs a statement between the onExec hooks. onExec(after) may replace
// a successful answer by an error (a reply lost after the server committed):
// the connection is then broken for good, as a lost reply leaves it.
func (cn *hookConn) exec(query string, run func() (driver.Result, error)) (driver.Result, error) {
	if cn.broken.Load() {
		return nil, driver.ErrBadConn
	}
	if cn.c.onExec != nil {
		cn.c.onExec(query, false, nil)
	}
	res, err := run()
	if cn.c.onExec != nil && err == nil && cn.c.loseReply != nil && cn.c.loseReply(query) {
		cn.broken.Store(true)
		_ = cn.Conn.Close()
		return nil, errReplyLost
	}
	if cn.c.onExec != nil {
		cn.c.onExec(query, true, err)
	}
	return res, err
}

// errReplyLost: the statement was answered, and the answer thrown away.
var errReplyLost = fmt.Errorf("injected fault: the server's answer was lost: %w", io.ErrUnexpectedEOF)

func (cn *hookConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := cn.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return cn.exec(query, func() (driver.Result, error) { return e.ExecContext(ctx, query, args) })
}

func (cn *hookConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := cn.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (cn *hookConn) Ping(ctx context.Context) error {
	if p, ok := cn.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (cn *hookConn) ResetSession(ctx context.Context) error {
	if cn.broken.Load() {
		return driver.ErrBadConn
	}
	if r, ok := cn.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (cn *hookConn) IsValid() bool {
	if cn.broken.Load() {
		return false
	}
	if v, ok := cn.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (cn *hookConn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := cn.Conn.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
