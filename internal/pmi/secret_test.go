package pmi_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Every process of a job learns the secret process 0 drew; another job
// has another.
func TestSecret(t *testing.T) {
	draw := func() [][]byte {
		kvs := pmi.NewMemory(3)
		got := make([][]byte, len(kvs))
		errs := make([]error, len(kvs))
		var wg sync.WaitGroup
		for i, kv := range kvs {
			wg.Go(func() {
				if errs[i] = pmi.PutSecret(kv, "s"); errs[i] != nil {
					return
				}
				if errs[i] = kv.Fence(); errs[i] != nil {
					return
				}
				got[i], errs[i] = pmi.Secret(kv, "s")
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("process %d: %v", i, err)
			}
		}
		return got
	}
	a, b := draw(), draw()
	for i, s := range a {
		if len(s) != pmi.SecretSize || !bytes.Equal(s, a[0]) {
			t.Errorf("process %d: secret %x, process 0's %x", i, s, a[0])
		}
	}
	if bytes.Equal(a[0], b[0]) {
		t.Errorf("two jobs drew the same secret %x", a[0])
	}
}

// A missing, short or garbled secret fails the bootstrap.
func TestSecretMalformed(t *testing.T) {
	for name, value := range map[string]string{"missing": "", "short": "00112233", "not hex": "zz00112233445566778899aabbccddeeff"} {
		kv := pmi.NewMemory(1)[0]
		if value != "" {
			kv.Put("s", value)
		}
		kv.Fence()
		if _, err := pmi.Secret(kv, "s"); !errors.Is(err, device.ErrBootstrap) {
			t.Errorf("%s: %v, want ErrBootstrap", name, err)
		}
	}
}
