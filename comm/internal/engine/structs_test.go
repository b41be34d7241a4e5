package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A table gives a shape one code, whatever Go type registers it, and
// names every such type; another shape gets the next code.
func TestStructTableCodes(t *testing.T) {
	var st structTable
	a, err := st.register("shape a", 24, "pkg.a")
	if err != nil || a != firstStruct {
		t.Fatalf("first shape: %v %v, want code %d", a, err, firstStruct)
	}
	a2, err := st.register("shape a", 24, "pkg.alias")
	if err != nil || a2 != a {
		t.Fatalf("same shape, another name: %v %v, want %v", a2, err, a)
	}
	if _, err := st.register("shape a", 24, "pkg.a"); err != nil {
		t.Fatal(err)
	}
	if got := st.table[a].Load().String(); got != "pkg.a or pkg.alias" {
		t.Errorf("names %q, want %q", got, "pkg.a or pkg.alias")
	}
	b, err := st.register("shape b", 12, "pkg.b")
	if err != nil || b != a+1 {
		t.Fatalf("second shape: %v %v, want %d", b, err, a+1)
	}
	if s := st.table[b].Load(); s.size != 12 || s.fp != Fingerprint("shape b") {
		t.Errorf("entry %+v", s)
	}
}

// Two shapes of one fingerprint (FNV-1a of these two strings collides)
// cannot be told apart on the wire: the second is refused.
func TestStructTableCollision(t *testing.T) {
	if Fingerprint("shape-9758") != Fingerprint("shape-47484") {
		t.Fatal("the test's shapes do not collide")
	}
	var st structTable
	if _, err := st.register("shape-9758", 8, "pkg.x"); err != nil {
		t.Fatal(err)
	}
	_, err := st.register("shape-47484", 8, "pkg.y")
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "pkg.x") || !strings.Contains(err.Error(), "pkg.y") {
		t.Errorf("colliding shape: %v, want ErrType naming both types", err)
	}
}

// The table holds maxStructs shapes; the next fails with ErrType.
func TestStructTableFull(t *testing.T) {
	if maxStructs != 238 {
		t.Errorf("%d struct layouts a process; comm.TypeOf's documentation says 238", maxStructs)
	}
	var st structTable
	for i := range maxStructs {
		if _, err := st.register(fmt.Sprint("shape ", i), 8, "pkg.t"); err != nil {
			t.Fatalf("shape %d: %v", i, err)
		}
	}
	if _, err := st.register("one more", 8, "pkg.u"); !errors.Is(err, ErrType) {
		t.Errorf("shape %d: %v, want ErrType", maxStructs+1, err)
	}
}

// Between processes a struct type travels as StructWire and its
// fingerprint, and comes back as this process's code, or as unknownStruct
// where no type of its shape is registered; a number never has a
// fingerprint, and no sender uses another code.
func TestStructWire(t *testing.T) {
	typ, err := RegisterStruct("engine test shape", 16, "engine.testShape")
	if err != nil {
		t.Fatal(err)
	}
	if !typ.IsStruct() || typ.Size() != 16 || typ.String() != "engine.testShape" {
		t.Errorf("registered %d: struct %v, size %d, name %q", typ, typ.IsStruct(), typ.Size(), typ)
	}
	code, fp := typ.wire()
	if Type(code) != StructWire || fp != Fingerprint("engine test shape") {
		t.Errorf("wire (%d, %08x)", code, fp)
	}
	for _, c := range []struct {
		code uint8
		fp   uint32
		want Type
		ok   bool
	}{
		{code, fp, typ, true},
		{code, fp + 1, unknownStruct, true},
		{3, 0, 3, true},
		{3, fp, 0, false},
		{uint8(NumTypes + 1), 0, 0, false},
		{uint8(typ), 0, 0, false}, // a code of this process never travels
	} {
		if got, ok := fromWire(c.code, c.fp); got != c.want || ok != c.ok {
			t.Errorf("fromWire(%d, %08x) = %d, %v; want %d, %v", c.code, c.fp, got, ok, c.want, c.ok)
		}
	}
	if c, f := Type(12).wire(); c != 12 || f != 0 {
		t.Errorf("float64 on the wire: (%d, %08x)", c, f)
	}
	if id := typ.Ident(); id != uint64(StructWire)|uint64(fp)<<8 || IdentString(id) != "engine.testShape" {
		t.Errorf("identity %#x (%s)", id, IdentString(id))
	}
	if id := Type(12).Ident(); id != 12 || IdentString(id) != "float64" {
		t.Errorf("float64's identity %#x (%s)", id, IdentString(id))
	}
	if s := IdentString(uint64(StructWire) | uint64(fp+1)<<8); s != fmt.Sprintf("a struct type unknown here (fingerprint %08x)", fp+1) {
		t.Errorf("an unknown layout's identity: %s", s)
	}
	if unknownStruct.IsStruct() || Type(NumTypes).IsStruct() || Byte.IsStruct() {
		t.Error("IsStruct of a code that is not a registered struct type")
	}
}
