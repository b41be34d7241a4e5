package pmi

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
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
// The exchange is authenticated with an HMAC-SHA256 over a fresh nonce
// when a secret is given (MPGO_SECRET, the same in every process); without
// one, anyone who reaches the address during start-up can join the
// exchange, so give one on shared networks.
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
	Addr                 string        // host:port of process 0's rendezvous
	Secret               []byte        // shared by every process; may be empty
	Timeout              time.Duration // for connecting and each fence's peers to arrive (default 60s)
}

const (
	rootMagic   = "mpgo-root/1"
	rootMaxLine = 16 << 20
)

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
		return nil, fmt.Errorf("pmi: started by Open MPI's mpirun: set MPGO_ROOT=host:port (a free port on the host of rank 0, e.g. mpirun -x MPGO_ROOT=node1:7000) for the address exchange: %w", ErrNoLauncher)
	}
	cfg.Secret = []byte(getenv("MPGO_SECRET"))
	return NewRoot(cfg)
}

// NewRoot joins the rendezvous at cfg.Addr; process 0 also serves it
// there.
func NewRoot(cfg RootConfig) (*Root, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("pmi: rank %d of a job of %d: %w", cfg.Rank, cfg.Size, ErrNoLauncher)
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
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("pmi: rank 0 cannot serve the rendezvous MPGO_ROOT=%s: %w: %w", cfg.Addr, ErrNoLauncher, err)
		}
		j.srv = newRootServer(ln, cfg.Size, cfg.Secret, cfg.Timeout)
		cfg.Addr = ln.Addr().String() // port 0 in tests
	}
	conn, err := dialRetry(cfg.Addr, cfg.Timeout)
	if err == nil {
		j.conn, j.r = conn, bufio.NewReaderSize(conn, 4096)
		err = j.hello(cfg.Secret, cfg.Timeout)
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
func dialRetry(addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		conn, err := net.DialTimeout("tcp", addr, timeout)
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

// rootMAC authenticates a process's hello.
func rootMAC(secret, nonce []byte, rank int) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(rootMagic))
	m.Write(nonce)
	m.Write([]byte(strconv.Itoa(rank)))
	return m.Sum(nil)
}

func (j *Root) hello(secret []byte, timeout time.Duration) error {
	j.conn.SetDeadline(time.Now().Add(timeout))
	defer j.conn.SetDeadline(time.Time{})
	line, err := readLimited(j.r, rootMaxLine)
	if err != nil {
		return fmt.Errorf("pmi: rendezvous: %w: %w", ErrProtocol, err)
	}
	cmd, f := parseCmd(line)
	nonce, err := hex.DecodeString(f["nonce"])
	if cmd != rootMagic || err != nil || len(nonce) != 32 {
		return fmt.Errorf("pmi: rendezvous sent %q: %w", line, ErrProtocol)
	}
	mac := hex.EncodeToString(rootMAC(secret, nonce, j.rank))
	_, err = fmt.Fprintf(j.conn, "hello rank=%d size=%d mac=%s\n", j.rank, j.size, mac)
	if err == nil {
		line, err = readLimited(j.r, rootMaxLine)
	}
	if err != nil {
		return fmt.Errorf("pmi: rendezvous hello: %w: %w", ErrProtocol, err)
	}
	if line != "welcome" {
		return fmt.Errorf("pmi: rendezvous refused rank %d: %q: %w", j.rank, line, ErrProtocol)
	}
	return nil
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
	ranks     map[int]bool // ranks that said hello
	finalized int
	fence     map[string]string // pairs put in the current fence
	waiting   []net.Conn        // processes in the current fence
	visible   map[string]string
	failed    bool
	allDone   chan struct{} // closed when every process finalized
	dead      chan struct{} // closed when the rendezvous failed
}

func newRootServer(ln net.Listener, n int, secret []byte, timeout time.Duration) *rootServer {
	s := &rootServer{ln: ln, n: n, secret: secret, timeout: timeout, conns: map[net.Conn]bool{},
		ranks: map[int]bool{}, fence: map[string]string{}, visible: map[string]string{},
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
			s.mu.Unlock()
			c.Close()
			return
		default: // abort, or garbage from an authenticated process
			s.fail()
			return
		}
	}
}

// greet authenticates a process: nonce out, hello with the MAC back.
func (s *rootServer) greet(c net.Conn, r *bufio.Reader) error {
	c.SetDeadline(time.Now().Add(s.timeout))
	defer c.SetDeadline(time.Time{})
	nonce := make([]byte, 32)
	rand.Read(nonce)
	if _, err := fmt.Fprintf(c, "%s nonce=%s\n", rootMagic, hex.EncodeToString(nonce)); err != nil {
		return err
	}
	line, err := readLimited(r, 1024)
	if err != nil {
		return err
	}
	cmd, f := parseCmd(line)
	rank, err1 := strconv.Atoi(f["rank"])
	size, err2 := strconv.Atoi(f["size"])
	mac, err3 := hex.DecodeString(f["mac"])
	if cmd != "hello" || err1 != nil || err2 != nil || err3 != nil || size != s.n || rank < 0 || rank >= s.n ||
		!hmac.Equal(mac, rootMAC(s.secret, nonce, rank)) {
		fmt.Fprintf(c, "refused\n")
		return ErrProtocol
	}
	s.mu.Lock()
	dup := s.ranks[rank]
	s.ranks[rank] = true
	s.mu.Unlock()
	if dup {
		fmt.Fprintf(c, "refused duplicate\n")
		return ErrProtocol
	}
	_, err = fmt.Fprintf(c, "welcome\n")
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
	if len(s.waiting) < s.n {
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
func (s *rootServer) fail() {
	s.mu.Lock()
	if !s.failed {
		s.failed = true
		close(s.dead)
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
