package engine

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Struct element types: fixed-size Go types without pointers (structs and
// arrays of numbers, bools, and such structs and arrays) whose slices
// travel as their memory. comm describes such a type by its shape, a
// canonical encoding of its memory layout (size, alignment, and each
// field's offset and kind, recursively; no names), and registers it here.
//
// Invariants:
//   - A shape has one Type in this process, a code in
//     [firstStruct, unknownStruct): two Go types of one shape share it,
//     so the type check on receipt, which compares codes, lets them
//     match (as MPI's derived types of one type map do). Codes are
//     handed out in the order shapes are first registered, so they
//     differ between processes and never travel.
//   - Between processes a message of a struct type carries StructWire as
//     its type and its shape's fingerprint (32 bits of FNV-1a) beside it
//     (device.Envelope.Fingerprint); the receiving engine maps the
//     fingerprint back to its own code, or to unknownStruct when no type
//     of that shape is registered here yet. Such a message keeps its
//     fingerprint, and the receive that takes it compares that with its
//     own type's (lateStruct): the process may register the type only
//     after the message arrived, when its first receive of it is posted.
//     No receive of another shape, nor of a number type, accepts it; one
//     of Byte accepts every message.
//   - Two shapes with one fingerprint cannot be told apart on the wire:
//     registering the second fails, so that a mismatch never passes
//     unseen.
//   - Entries are never removed: the table holds facts about types,
//     common to every World of the process, and grows only with the
//     distinct shapes the program uses.

// StructWire is the type code of a struct element type on the wire, with
// its fingerprint beside it.
const StructWire Type = NumTypes

const (
	// firstStruct is the first code of a registered struct type.
	firstStruct Type = StructWire + 1
	// unknownStruct is the code of a message whose struct type has no
	// shape registered in this process.
	unknownStruct Type = 255
)

// maxStructs is the number of struct shapes one process can register.
const maxStructs = int(unknownStruct - firstStruct)

// structType is one registered shape.
type structType struct {
	fp    uint32
	size  int
	shape string
	names []string // the Go types of this shape, as reflect names them
}

// String names the Go types of s's shape.
func (s *structType) String() string { return strings.Join(s.names, " or ") }

// structTable is a table of struct types; the process has one, structs.
type structTable struct {
	mu    sync.Mutex                      // serialises registrations
	byFP  sync.Map                        // fingerprint → Type; read without mu
	table [256]atomic.Pointer[structType] // by code; written under mu, read without
	next  Type                            // the next free code (0: firstStruct); guarded by mu
}

// structs is the process's table of struct types.
var structs structTable

// Fingerprint hashes a shape: FNV-1a, 32 bits.
func Fingerprint(shape string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(shape))
	return h.Sum32()
}

// RegisterStruct returns the Type of a struct element type of the given
// shape and size in bytes (at least 1), registering it under name (the Go
// type's name, for errors) on first use. It fails with an error wrapping
// ErrType when another shape has the same fingerprint, or when the
// process registered maxStructs shapes already. Safe for concurrent use.
func RegisterStruct(shape string, size int, name string) (Type, error) {
	return structs.register(shape, size, name)
}

func (st *structTable) register(shape string, size int, name string) (Type, error) {
	fp := Fingerprint(shape)
	st.mu.Lock()
	defer st.mu.Unlock()
	if v, ok := st.byFP.Load(fp); ok {
		t := v.(Type)
		old := st.table[t].Load()
		if old.shape != shape {
			return 0, fmt.Errorf("comm: element types %s and %s have different layouts of one fingerprint %08x: %w", old, name, fp, ErrType)
		}
		if !slices.Contains(old.names, name) {
			nt := *old
			nt.names = append(slices.Clip(old.names), name)
			st.table[t].Store(&nt)
		}
		return t, nil
	}
	t := max(st.next, firstStruct)
	if t == unknownStruct {
		return 0, fmt.Errorf("comm: element type %s: more than %d struct layouts in one process: %w", name, maxStructs, ErrType)
	}
	st.next = t + 1
	st.table[t].Store(&structType{fp: fp, size: size, shape: shape, names: []string{name}})
	st.byFP.Store(fp, t)
	return t, nil
}

// structOf returns the registered struct type of code t, nil if there is
// none.
func structOf(t Type) *structType {
	if t < firstStruct {
		return nil
	}
	return structs.table[t].Load()
}

// IsStruct reports whether t is a struct type registered in this process.
func (t Type) IsStruct() bool { return structOf(t) != nil }

// wire returns t as a message carries it between processes: its code, and
// for a struct type StructWire with the fingerprint.
func (t Type) wire() (code uint8, fp uint32) {
	if s := structOf(t); s != nil {
		return uint8(StructWire), s.fp
	}
	return uint8(t), 0
}

// Ident is t's identity between processes: its code for a built-in type;
// StructWire with the fingerprint above it for a struct type, which
// processes number differently. Collectives that exchange their ranks'
// types as values (comm's agreements, Alltoallw) compare these.
func (t Type) Ident() uint64 {
	code, fp := t.wire()
	return uint64(code) | uint64(fp)<<8
}

// IdentString names the type of identity id, for errors.
func IdentString(id uint64) string {
	code, fp := uint8(id), uint32(id>>8)
	switch t, ok := fromWire(code, fp); {
	case !ok || id>>40 != 0:
		return fmt.Sprintf("type identity %#x", id)
	case t == unknownStruct:
		return fmt.Sprintf("a struct type unknown here (fingerprint %08x)", fp)
	default:
		return t.String()
	}
}

// fromWire returns the Type of a message from another process of type
// code and fingerprint fp, and false for a combination no sender makes.
func fromWire(code uint8, fp uint32) (Type, bool) {
	switch t := Type(code); {
	case t < NumTypes && fp == 0:
		return t, true
	case t == StructWire:
		if v, ok := structs.byFP.Load(fp); ok {
			return v.(Type), true
		}
		return unknownStruct, true
	}
	return 0, false
}

// lateStruct reports whether m, a message from another process whose
// struct type had no shape registered here when it arrived, is of struct
// type t's shape: registered since. (take asks only when m's type code
// differs from the receive's.)
func (m *msg) lateStruct(t Type) bool {
	if m.typ != unknownStruct {
		return false
	}
	s := structOf(t)
	return s != nil && s.fp == m.fp
}

// typeName names m's element type for an error: a struct type of a
// shape unknown here by its fingerprint.
func (m *msg) typeName() string {
	if m.typ != unknownStruct {
		return m.typ.String()
	}
	if v, ok := structs.byFP.Load(m.fp); ok {
		return v.(Type).String()
	}
	return fmt.Sprintf("a struct type unknown here (fingerprint %08x)", m.fp)
}
