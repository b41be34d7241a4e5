package pmi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Client speaks the PMI-1 wire protocol to a launcher (MPICH's Hydra,
// Slurm's pmi2 plugin): one request line of space-separated key=value
// pairs, then one reply line, as MPICH's simple PMI client
// (src/pmi/simple) exchanges them:
//
//	cmd=init pmi_version=1 pmi_subversion=1
//	  cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0
//	cmd=get_maxes
//	  cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024
//	cmd=get_my_kvsname
//	  cmd=my_kvsname kvsname=kvs_1_0
//	cmd=put kvsname=kvs_1_0 key=k value=v
//	  cmd=put_result rc=0
//	cmd=barrier_in
//	  cmd=barrier_out
//	cmd=get kvsname=kvs_1_0 key=k
//	  cmd=get_result rc=0 value=v
//	cmd=finalize
//	  cmd=finalize_ack
//	cmd=abort exitcode=1        (no reply: the launcher ends the job)
//
// In PMI_PORT mode the client first identifies itself with
// "cmd=initack pmiid=ID" and learns its rank and the job's size from the
// "cmd=set" lines of the reply.
//
// Safe for concurrent use: requests are serialized.
type Client struct {
	mu     sync.Mutex // serializes requests; guards everything below
	conn   io.ReadWriteCloser
	r      *bufio.Reader
	closed bool

	rank, size           int
	localRank, localSize int
	kvs                  string
	keyMax, valMax       int
}

// ClientConfig describes what the environment told the process about
// itself (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, …) for [NewClient].
type ClientConfig struct {
	// Rank and Size of the process in the job; ignored in PMI_PORT mode
	// (ID set), where the launcher sends them.
	Rank, Size int
	// ID is PMI_ID in PMI_PORT mode, empty with PMI_FD.
	ID string
	// LocalRank and LocalSize describe the node's processes; LocalSize 0
	// means unknown (the node then counts as holding this process only).
	LocalRank, LocalSize int
}

// maxLine bounds a reply line; launchers keep them under 1 KiB (Hydra's
// PMIU_MAXLINE) plus a value.
const maxLine = 64 << 10

// NewClient performs the PMI-1 handshake over conn (init, get_maxes,
// get_my_kvsname) and returns the client. It takes ownership of conn:
// Finalize closes it, and so does NewClient when it fails.
func NewClient(conn io.ReadWriteCloser, cfg ClientConfig) (*Client, error) {
	c := &Client{conn: conn, r: bufio.NewReaderSize(conn, 4096),
		rank: cfg.Rank, size: cfg.Size, localRank: cfg.LocalRank, localSize: cfg.LocalSize}
	if err := c.start(cfg.ID); err != nil {
		conn.Close()
		return nil, err
	}
	if c.localSize < 1 || c.localRank < 0 || c.localRank >= c.localSize {
		c.localRank, c.localSize = 0, 1
	}
	return c, nil
}

func (c *Client) start(id string) error {
	if id != "" {
		if _, err := c.call("initack", "cmd=initack pmiid="+id); err != nil {
			return err
		}
		// Three "cmd=set" lines follow: size, rank, debug.
		for range 3 {
			f, err := c.readReply("set")
			if err != nil {
				return err
			}
			for k, dst := range map[string]*int{"size": &c.size, "rank": &c.rank} {
				if v, ok := f[k]; ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						return fmt.Errorf("pmi: cmd=set %s=%q: %w", k, v, ErrProtocol)
					}
					*dst = n
				}
			}
		}
	}
	if c.size < 1 || c.rank < 0 || c.rank >= c.size {
		return fmt.Errorf("pmi: rank %d of a job of %d: %w", c.rank, c.size, ErrNoLauncher)
	}
	f, err := c.call("response_to_init", "cmd=init pmi_version=1 pmi_subversion=1")
	if err != nil {
		return err
	}
	if err := rc(f, "init"); err != nil {
		return err
	}
	if v := f["pmi_version"]; v != "" && v != "1" {
		return fmt.Errorf("pmi: launcher speaks PMI version %s, want 1: %w", v, ErrProtocol)
	}
	// Any pmi_subversion will do: the commands used here exist in all.
	if f, err = c.call("maxes", "cmd=get_maxes"); err != nil {
		return err
	}
	c.keyMax, _ = strconv.Atoi(f["keylen_max"])
	c.valMax, _ = strconv.Atoi(f["vallen_max"])
	if f, err = c.call("my_kvsname", "cmd=get_my_kvsname"); err != nil {
		return err
	}
	c.kvs = f["kvsname"]
	if err := checkWord("kvsname", c.kvs, 0); err != nil {
		return fmt.Errorf("pmi: launcher sent a bad kvsname: %w: %w", ErrProtocol, err)
	}
	return nil
}

// call sends one request line and reads the reply, which must be cmd=want.
// c.mu must be held (or c not yet shared).
func (c *Client) call(want, line string) (map[string]string, error) {
	if c.closed {
		return nil, ErrClosed
	}
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		return nil, fmt.Errorf("pmi: %s: %w: %w", want, ErrProtocol, err)
	}
	return c.readReply(want)
}

// readReply reads one reply line, which must be cmd=want.
func (c *Client) readReply(want string) (map[string]string, error) {
	line, err := c.readLine()
	if err != nil {
		return nil, fmt.Errorf("pmi: waiting for cmd=%s: %w: %w", want, ErrProtocol, err)
	}
	f := parseLine(line)
	if f["cmd"] != want {
		return nil, fmt.Errorf("pmi: got %q, want cmd=%s: %w", line, want, ErrProtocol)
	}
	return f, nil
}

func (c *Client) readLine() (string, error) {
	var buf []byte
	for {
		part, err := c.r.ReadSlice('\n')
		buf = append(buf, part...)
		if len(buf) > maxLine {
			return "", fmt.Errorf("reply longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		return string(bytes.TrimRight(buf, "\r\n")), nil
	}
}

// parseLine splits a reply into its key=value fields; fields without '='
// are ignored, as the simple client does.
func parseLine(line string) map[string]string {
	f := map[string]string{}
	for w := range strings.FieldsSeq(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			f[k] = v
		}
	}
	return f
}

// rc checks a reply's return code.
func rc(f map[string]string, what string) error {
	if v, ok := f["rc"]; ok && v != "0" {
		return fmt.Errorf("pmi: %s failed with rc=%s (%s): %w", what, v, f["msg"], ErrProtocol)
	}
	return nil
}

func (c *Client) Rank() int      { return c.rank }
func (c *Client) Size() int      { return c.size }
func (c *Client) LocalRank() int { return c.localRank }
func (c *Client) LocalSize() int { return c.localSize }

// KVSName returns the name of the job's key-value space.
func (c *Client) KVSName() string { return c.kvs }

// Put implements [Job.Put].
func (c *Client) Put(key, value string) error {
	if err := checkWord("key", key, c.keyMax); err != nil {
		return err
	}
	if err := checkWord("value", value, c.valMax); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.call("put_result", "cmd=put kvsname="+c.kvs+" key="+key+" value="+value)
	if err != nil {
		return err
	}
	return rc(f, "put "+key)
}

// Fence implements [Job.Fence] with barrier_in/barrier_out.
func (c *Client) Fence() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.call("barrier_out", "cmd=barrier_in")
	if err != nil {
		return err
	}
	return rc(f, "barrier")
}

// Get implements [Job.Get]. Any non-zero rc counts as a missing key
// (Hydra answers rc=-1, Slurm rc=1).
func (c *Client) Get(key string) (string, error) {
	if err := checkWord("key", key, c.keyMax); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.call("get_result", "cmd=get kvsname="+c.kvs+" key="+key)
	if err != nil {
		return "", err
	}
	if v, ok := f["rc"]; ok && v != "0" {
		return "", fmt.Errorf("pmi: get %q: rc=%s: %w", key, v, ErrNotFound)
	}
	v, ok := f["value"]
	if !ok {
		return "", fmt.Errorf("pmi: get %q: reply without a value: %w", key, ErrProtocol)
	}
	return v, nil
}

// Abort implements [Job.Abort]: "cmd=abort exitcode=N"; the launcher
// sends no reply, it ends the job. msg is not sent (the line format has
// no room for arbitrary text); print it before aborting.
func (c *Client) Abort(code int, msg string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	_, err := io.WriteString(c.conn, "cmd=abort exitcode="+strconv.Itoa(code)+"\n")
	if err != nil {
		return fmt.Errorf("pmi: abort: %w: %w", ErrProtocol, err)
	}
	return nil
}

// Finalize implements [Job.Finalize]: finalize, finalize_ack, and the
// connection is closed.
func (c *Client) Finalize() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	_, err := c.call("finalize_ack", "cmd=finalize")
	c.closed = true
	if cerr := c.conn.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("pmi: finalize: %w", cerr)
	}
	return err
}

var _ Job = (*Client)(nil)
