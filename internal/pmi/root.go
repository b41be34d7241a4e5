package pmi

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Root is a key-value space kept by the job's process 0 at an address the
// user names (MPGO_ROOT=host:port), for launchers that start processes
// but offer no key-value space mpgo can reach (Open MPI's mpirun without
// libpmix). Process 0 listens there; every process, 0 included, connects
// and takes part in the fences: each sends the pairs it put, process 0
// answers every process with all pairs once all have arrived.
//
// The address is open to anyone who reaches it, so both ends prove that
// they hold the job's secret (MPGO_SECRET, the same in every process)
// before anything else: an HMAC-SHA256 over a nonce from each side, the
// process's rank and the job's size. A stranger who connects cannot claim
// a rank, and one who listens at the address first cannot pose as
// process 0 (the processes refuse its welcome). A rank claimed by two
// processes that both hold the secret (two jobs started with the same
// MPGO_ROOT and MPGO_SECRET) fails the second at once and the rendezvous
// for everyone. Without a secret, or with one shorter than 16 bytes,
// [NewRoot] refuses to start unless told that the network is trusted
// ([RootConfig.Insecure], MPGO_INSECURE=1). The rendezvous neither
// encrypts its traffic nor protects it against an attacker on the path.
//
// Safe for concurrent use: requests are serialized.
type Root struct {
	mu      sync.Mutex // serializes requests; guards everything below
	conn    net.Conn
	r       *bufio.Reader
	closed  bool
	puts    map[string]string
	visible map[string]string

	rank, size           int
	localRank, localSize int
	srv                  *rootServer // process 0 only
}

// RootConfig configures [NewRoot].
type RootConfig struct {
	Rank, Size           int
	LocalRank, LocalSize int
	Addr                 string // host:port of process 0's rendezvous
	// Network is "tcp" (the default) or "unix": Addr is then a Unix
	// socket's name (abstract where it starts with @), and the two ends
	// of every connection check that they run as the same user instead
	// of proving that they hold Secret, which is not needed (Linux only).
	Network string
	// Secret is shared by every process of the job, and by nobody else:
	// at least MinSecret bytes, unless Insecure.
	Secret []byte
	// Insecure allows a Secret shorter than MinSecret, or none: then
	// anyone who reaches Addr during start-up can join the job as one of
	// its ranks. Only for networks that nobody else reaches.
	Insecure bool
	Timeout  time.Duration // for connecting and each fence's peers to arrive (default 60s)
}

// MinSecret is the shortest job secret the rendezvous takes (unless
// insecure): 16 bytes are beyond guessing, and each guess costs a
// connection.
const MinSecret = 16

// ErrStranger is wrapped by the errors of a local rendezvous
// (local_linux.go) whose other end runs as another user.
var ErrStranger = errors.New("pmi: the other end of the rendezvous runs as another user")

const (
	rootMagic   = "mpgo-root/2" // /1 had no secret by default and did not prove process 0
	rootMaxLine = 16 << 20
	nonceLen    = 32
)

// secretHelp says how to give the rendezvous a secret; the error that
// refuses to start without one ends with it.
const secretHelp = "set MPGO_SECRET to the same value of 16 bytes or more in every process, " +
	"passed through the environment rather than the command line, where other users can read it: " +
	"export MPGO_SECRET=$(head -c16 /dev/urandom | base64); mpirun -x MPGO_ROOT=host:port -x MPGO_SECRET ... " +
	"(or MPGO_INSECURE=1 where nobody else can reach MPGO_ROOT)"

func rootFromEnv(getenv func(string) string) (Job, error) {
	var cfg RootConfig
	var err error
	if cfg.Rank, err = envInt(getenv, "OMPI_COMM_WORLD_RANK", -1); err != nil {
		return nil, err
	}
	if cfg.Size, err = envInt(getenv, "OMPI_COMM_WORLD_SIZE", -1); err != nil {
		return nil, err
	}
	if cfg.LocalRank, err = envInt(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", 0); err != nil {
		return nil, err
	}
	if cfg.LocalSize, err = envInt(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE", 0); err != nil {
		return nil, err
	}
	cfg.Addr = getenv("MPGO_ROOT")
	if cfg.Addr == "" {
		addr, ok := localRendezvous(getenv)
		if !ok {
			return nil, fmt.Errorf("pmi: started by Open MPI's mpirun across hosts (or without PMIX_NAMESPACE): set MPGO_ROOT=host:port (a free port on the host of rank 0, e.g. mpirun -x MPGO_ROOT=node1:7000) for the address exchange: %w", ErrNoLauncher)
		}
		cfg.Network, cfg.Addr = "unix", addr // one host: see local_linux.go
	}
	// The secret is the user's: nothing mpirun puts in the environment
	// will do. OMPI_MCA_orte_precondition_transports (Open MPI 4's 128-bit
	// job key, which other accounts cannot read there) comes from
	// /dev/urandom only when the user's environment has none: mpirun
	// keeps one that is there, and sites set it from the Slurm job id,
	// which anyone can list. Job ids and PMIx namespaces are public.
	cfg.Secret = []byte(getenv("MPGO_SECRET"))
	if v := getenv("MPGO_INSECURE"); v != "" {
		if cfg.Insecure, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("pmi: MPGO_INSECURE=%q: want 1 or 0: %w", v, ErrNoLauncher)
		}
	}
	return NewRoot(cfg)
}

// NewRoot joins the rendezvous at cfg.Addr; process 0 also serves it
// there.
func NewRoot(cfg RootConfig) (*Root, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("pmi: rank %d of a job of %d: %w", cfg.Rank, cfg.Size, ErrNoLauncher)
	}
	network := cfg.Network
	if network == "" {
		network = "tcp"
	}
	if len(cfg.Secret) < MinSecret && !cfg.Insecure && network != "unix" {
		what := "no MPGO_SECRET"
		if len(cfg.Secret) > 0 {
			what = fmt.Sprintf("an MPGO_SECRET of %d bytes", len(cfg.Secret))
		}
		return nil, fmt.Errorf("pmi: rank %d: the rendezvous at MPGO_ROOT=%s with %s would let anyone who reaches it join the job as one of its ranks; %s: %w",
			cfg.Rank, cfg.Addr, what, secretHelp, ErrNoLauncher)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	j := &Root{rank: cfg.Rank, size: cfg.Size, localRank: cfg.LocalRank, localSize: cfg.LocalSize,
		puts: map[string]string{}, visible: map[string]string{}}
	if j.localSize < 1 || j.localRank < 0 || j.localRank >= j.localSize {
		j.localRank, j.localSize = 0, 1
	}
	if cfg.Rank == 0 {
		ln, err := net.Listen(network, cfg.Addr)
		if err != nil {
			if network == "unix" {
				return nil, fmt.Errorf("pmi: rank 0 cannot serve the job's rendezvous on this host (%s): another process holds its name; MPGO_ROOT=host:port and MPGO_SECRET make it use TCP instead: %w: %w", cfg.Addr, ErrNoLauncher, err)
			}
			return nil, fmt.Errorf("pmi: rank 0 cannot serve the rendezvous MPGO_ROOT=%s: %w: %w", cfg.Addr, ErrNoLauncher, err)
		}
		if network == "unix" {
			ln = sameUserListener{ln}
		}
		j.srv = newRootServer(ln, cfg.Size, cfg.Secret, cfg.Timeout)
		cfg.Addr = ln.Addr().String() // port 0 in tests
	}
	conn, err := dialRetry(network, cfg.Addr, cfg.Timeout)
	if err == nil && network == "unix" {
		if err = sameUser(conn); err != nil {
			conn.Close()
			conn = nil
			err = fmt.Errorf("pmi: the job's rendezvous on this host (%s) is not process 0's: %w: %w", cfg.Addr, ErrNoLauncher, err)
		}
	}
	if err == nil {
		j.conn, j.r = conn, bufio.NewReaderSize(conn, 4096)
		err = j.hello(cfg.Addr, cfg.Secret, cfg.Timeout)
	}
	if err != nil {
		if j.conn != nil {
			j.conn.Close()
		}
		if j.srv != nil {
			j.srv.stop()
		}
		return nil, err
	}
	return j, nil
}

// Addr returns the address process 0 serves the rendezvous on ("" in
// other processes).
func (j *Root) Addr() string {
	if j.srv == nil {
		return ""
	}
	return j.srv.ln.Addr().String()
}

// dialRetry connects to addr, retrying while process 0 may not listen yet.
func dialRetry(network, addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		conn, err := net.DialTimeout(network, addr, timeout)
		if err == nil {
			return conn, nil
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("pmi: rendezvous %s: %w: %w", addr, ErrNoLauncher, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// rootMAC proves that the sender of a hello or a welcome holds the secret:
// it covers both nonces, the rank and the job's size, and what is proved
// (label), so that neither message can be replayed as the other or for
// another rank.
func rootMAC(secret []byte, label string, serverNonce, clientNonce []byte, rank, size int) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(rootMagic + " " + label + " "))
	m.Write(serverNonce)
	m.Write(clientNonce)
	m.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(rank)), uint64(size)))
	return m.Sum(nil)
}

// hello proves to process 0's rendezvous at addr that this process holds
// the secret, and makes process 0 prove it back.
func (j *Root) hello(addr string, secret []byte, timeout time.Duration) error {
	j.conn.SetDeadline(time.Now().Add(timeout))
	defer j.conn.SetDeadline(time.Time{})
	line, err := readLimited(j.r, 1024)
	if err != nil {
		return fmt.Errorf("pmi: rendezvous MPGO_ROOT=%s: %w: %w", addr, ErrProtocol, err)
	}
	cmd, f := parseCmd(line)
	serverNonce, err := hex.DecodeString(f["nonce"])
	if cmd != rootMagic || err != nil || len(serverNonce) != nonceLen {
		return fmt.Errorf("pmi: rendezvous MPGO_ROOT=%s sent %.60q, not an mpgo rendezvous (%s): %w", addr, line, rootMagic, ErrProtocol)
	}
	clientNonce := make([]byte, nonceLen)
	rand.Read(clientNonce)
	mac := rootMAC(secret, "hello", serverNonce, clientNonce, j.rank, j.size)
	_, err = fmt.Fprintf(j.conn, "hello rank=%d size=%d nonce=%x mac=%x\n", j.rank, j.size, clientNonce, mac)
	if err == nil {
		line, err = readLimited(j.r, 1024)
	}
	if err != nil {
		return fmt.Errorf("pmi: rendezvous MPGO_ROOT=%s: hello from rank %d: %w: %w", addr, j.rank, ErrProtocol, err)
	}
	cmd, f = parseCmd(line)
	switch cmd {
	case "welcome":
		got, err := hex.DecodeString(f["mac"])
		if err != nil || !hmac.Equal(got, rootMAC(secret, "welcome", serverNonce, clientNonce, j.rank, j.size)) {
			return fmt.Errorf("pmi: rank %d: the rendezvous at MPGO_ROOT=%s does not hold the job's secret: another program listens there, or process 0 has another MPGO_SECRET: %w", j.rank, addr, ErrProtocol)
		}
		return nil
	case "taken":
		return fmt.Errorf("pmi: rendezvous MPGO_ROOT=%s: rank %d is taken: another process holding the job's secret joined as rank %d first (two jobs started with the same MPGO_ROOT and MPGO_SECRET?); the rendezvous fails for every process: %w", addr, j.rank, j.rank, ErrProtocol)
	}
	return fmt.Errorf("pmi: rendezvous MPGO_ROOT=%s refused rank %d (%.40q): the processes do not share MPGO_SECRET, or disagree on the job's size (%d): %w", addr, j.rank, line, j.size, ErrProtocol)
}

func (j *Root) Rank() int      { return j.rank }
func (j *Root) Size() int      { return j.size }
func (j *Root) LocalRank() int { return j.localRank }
func (j *Root) LocalSize() int { return j.localSize }

// Put implements [Job.Put].
func (j *Root) Put(key, value string) error {
	if err := checkWord("key", key, 0); err != nil {
		return err
	}
	if err := checkWord("value", value, 0); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	j.puts[key] = value
	return nil
}

// Fence implements [Job.Fence].
func (j *Root) Fence() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	var b strings.Builder
	b.WriteString("fence")
	for k, v := range j.puts {
		b.WriteString(" " + k + "=" + v)
	}
	b.WriteByte('\n')
	clear(j.puts)
	if _, err := io.WriteString(j.conn, b.String()); err != nil {
		return fmt.Errorf("pmi: fence: %w: %w", ErrProtocol, err)
	}
	line, err := readLimited(j.r, rootMaxLine)
	if err != nil {
		return fmt.Errorf("pmi: fence: %w: %w", ErrProtocol, err)
	}
	cmd, f := parseCmd(line)
	if cmd == "failed" && f["why"] == "taken" {
		return fmt.Errorf("pmi: fence: rank %s of the job was claimed by two processes holding the job's secret (two jobs started with the same MPGO_ROOT and MPGO_SECRET?): the rendezvous failed: %w", f["rank"], ErrProtocol)
	}
	if cmd != "fenced" {
		return fmt.Errorf("pmi: fence: got %.40q: %w", line, ErrProtocol)
	}
	j.visible = f
	return nil
}

// Get implements [Job.Get].
func (j *Root) Get(key string) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return "", ErrClosed
	}
	v, ok := j.visible[key]
	if !ok {
		return "", fmt.Errorf("pmi: get %q: %w", key, ErrNotFound)
	}
	return v, nil
}

// Abort implements [Job.Abort]: the rendezvous is torn down (processes in
// a fence fail); ending the other processes is left to the launcher,
// which does so when this one exits with a non-zero status.
func (j *Root) Abort(code int, msg string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	j.closed = true
	fmt.Fprintf(j.conn, "abort code=%d\n", code)
	j.conn.Close()
	if j.srv != nil {
		j.srv.stop()
	}
	return nil
}

// Finalize implements [Job.Finalize]. Process 0 keeps serving until every
// process finalized or left (at most the timeout).
func (j *Root) Finalize() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	j.closed = true
	io.WriteString(j.conn, "finalize\n")
	j.conn.Close()
	if j.srv != nil {
		j.srv.finish()
	}
	return nil
}

var _ Job = (*Root)(nil)

// parseCmd splits a line into its first word and its key=value fields.
func parseCmd(line string) (string, map[string]string) {
	cmd, rest, _ := strings.Cut(line, " ")
	return cmd, parseLine(rest)
}

// readLimited reads one line of at most max bytes, without its newline.
func readLimited(r *bufio.Reader, max int) (string, error) {
	var buf []byte
	for {
		part, err := r.ReadSlice('\n')
		buf = append(buf, part...)
		if len(buf) > max {
			return "", fmt.Errorf("line longer than %d bytes", max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		return strings.TrimRight(string(buf), "\r\n"), nil
	}
}

// rootServer is process 0's side of the rendezvous.
type rootServer struct {
	ln      net.Listener
	n       int
	secret  []byte
	timeout time.Duration
	wg      sync.WaitGroup

	mu        sync.Mutex // guards everything below
	conns     map[net.Conn]bool
	ranks     map[int]bool      // ranks that proved their hello
	joined    map[net.Conn]bool // the connections of those ranks
	finalized int
	fence     map[string]string // pairs put in the current fence
	waiting   []net.Conn        // processes in the current fence
	visible   map[string]string
	failed    bool
	doomed    bool          // a rank was claimed twice: no fence completes (failWith answers them)
	allDone   chan struct{} // closed when every process finalized
	dead      chan struct{} // closed when the rendezvous failed
}

func newRootServer(ln net.Listener, n int, secret []byte, timeout time.Duration) *rootServer {
	s := &rootServer{ln: ln, n: n, secret: secret, timeout: timeout, conns: map[net.Conn]bool{},
		ranks: map[int]bool{}, joined: map[net.Conn]bool{}, fence: map[string]string{}, visible: map[string]string{},
		allDone: make(chan struct{}), dead: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s
}

func (s *rootServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.failed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve runs one process's connection. A process that leaves without
// finalizing fails the rendezvous for all (a fence would never complete).
func (s *rootServer) serve(c net.Conn) {
	defer s.wg.Done()
	r := bufio.NewReaderSize(c, 4096)
	if err := s.greet(c, r); err != nil {
		s.drop(c)
		return
	}
	for {
		line, err := readLimited(r, rootMaxLine)
		if err != nil {
			s.fail()
			return
		}
		cmd, f := parseCmd(line)
		switch cmd {
		case "fence":
			s.enter(c, f)
		case "finalize":
			s.mu.Lock()
			s.finalized++
			if s.finalized == s.n {
				close(s.allDone)
			}
			delete(s.conns, c)
			delete(s.joined, c)
			s.mu.Unlock()
			c.Close()
			return
		default: // abort, or garbage from an authenticated process
			s.fail()
			return
		}
	}
}

// greet authenticates a process: a nonce out; a hello back that proves
// the secret for a rank nobody holds yet; a welcome that proves it in
// turn. A hello that proves nothing is refused and claims nothing. A
// proven hello for a taken rank is answered "taken" and fails the
// rendezvous: two processes of the job's secret claim one rank, and
// nothing tells which is the real one.
func (s *rootServer) greet(c net.Conn, r *bufio.Reader) error {
	c.SetDeadline(time.Now().Add(s.timeout))
	defer c.SetDeadline(time.Time{})
	serverNonce := make([]byte, nonceLen)
	rand.Read(serverNonce)
	if _, err := fmt.Fprintf(c, "%s nonce=%x\n", rootMagic, serverNonce); err != nil {
		return err
	}
	line, err := readLimited(r, 1024)
	if err != nil {
		return err
	}
	cmd, f := parseCmd(line)
	rank, err1 := strconv.Atoi(f["rank"])
	size, err2 := strconv.Atoi(f["size"])
	clientNonce, err3 := hex.DecodeString(f["nonce"])
	mac, err4 := hex.DecodeString(f["mac"])
	if cmd != "hello" || err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(clientNonce) != nonceLen ||
		!hmac.Equal(mac, rootMAC(s.secret, "hello", serverNonce, clientNonce, rank, size)) || size != s.n || rank < 0 || rank >= s.n {
		fmt.Fprintf(c, "refused\n")
		return ErrProtocol
	}
	s.mu.Lock()
	taken := s.ranks[rank]
	s.ranks[rank] = true
	if !taken {
		s.joined[c] = true
	}
	// Doomed at once, under the lock that fences enter by: the "taken"
	// answer below lets the claimant's peers fence before failWith runs,
	// and that fence must not complete.
	s.doomed = s.doomed || taken
	s.mu.Unlock()
	if taken {
		fmt.Fprintf(c, "taken rank=%d\n", rank)
		s.failWith(fmt.Sprintf("failed why=taken rank=%d\n", rank))
		return ErrProtocol
	}
	_, err = fmt.Fprintf(c, "welcome mac=%x\n", rootMAC(s.secret, "welcome", serverNonce, clientNonce, rank, size))
	return err
}

// enter adds a process to the current fence, completing it when all n
// are in.
func (s *rootServer) enter(c net.Conn, puts map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range puts {
		s.fence[k] = v
	}
	s.waiting = append(s.waiting, c)
	if len(s.waiting) < s.n || s.doomed {
		return
	}
	for k, v := range s.fence {
		s.visible[k] = v
	}
	clear(s.fence)
	var b strings.Builder
	b.WriteString("fenced")
	for k, v := range s.visible {
		b.WriteString(" " + k + "=" + v)
	}
	b.WriteByte('\n')
	reply := b.String()
	for _, w := range s.waiting {
		w.SetWriteDeadline(time.Now().Add(s.timeout))
		io.WriteString(w, reply) // a failed write shows on that process's side
	}
	s.waiting = s.waiting[:0]
}

func (s *rootServer) drop(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// fail tears the rendezvous down: every connection and the listener close.
func (s *rootServer) fail() { s.failWith("") }

// failWith is fail that first tells the processes that joined why, with
// the line why (if not empty): those in a fence read it as its answer.
func (s *rootServer) failWith(why string) {
	s.mu.Lock()
	if !s.failed {
		s.failed = true
		close(s.dead)
		if why != "" {
			for c := range s.joined {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				io.WriteString(c, why)
			}
		}
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
}

// finish waits (up to the timeout) for every process to finalize, then
// stops serving.
func (s *rootServer) finish() {
	select {
	case <-s.allDone:
	case <-s.dead:
	case <-time.After(s.timeout):
	}
	s.stop()
}

func (s *rootServer) stop() {
	s.fail()
	s.wg.Wait()
}
