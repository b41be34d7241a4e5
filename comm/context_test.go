package comm

import "testing"

func TestChildContextsDiffer(t *testing.T) {
	seen := map[uint64]string{worldContext: "world", worldContext | 1: "world coll"}
	for seq := uint32(1); seq < 200; seq++ {
		for color := -1; color < 50; color++ {
			c := childContext(worldContext, seq, color)
			if c&1 != 0 {
				t.Fatalf("context %x has the collective bit set", c)
			}
			for _, x := range []uint64{c, c | 1} {
				if prev, dup := seen[x]; dup {
					t.Fatalf("context %x of (%d, %d) collides with %s", x, seq, color, prev)
				}
				seen[x] = "child"
			}
		}
	}
}
