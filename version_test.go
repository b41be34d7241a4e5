package mpgo_test

import (
	"bufio"
	"os"
	"regexp"
	"testing"

	"github.com/mpgo/mpgo"
)

// TestVersion pins Version to semantic versioning and to the newest
// release CHANGELOG.md describes, so that neither is bumped alone.
func TestVersion(t *testing.T) {
	semver := regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	if !semver.MatchString(mpgo.Version) {
		t.Fatalf("Version %q is not a semantic version (vMAJOR.MINOR.PATCH)", mpgo.Version)
	}
	f, err := os.Open("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile(`^## (v\S+)`)
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := heading.FindStringSubmatch(s.Text()); m != nil {
			if m[1] != mpgo.Version {
				t.Fatalf("CHANGELOG.md's newest release is %s, Version is %s", m[1], mpgo.Version)
			}
			return
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("CHANGELOG.md names no release (want a heading %q)", "## "+mpgo.Version+" …")
}
