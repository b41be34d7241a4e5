package mpgo

// Version is this release of mpgo, as the module's tag names it (semantic
// versioning). CHANGELOG.md says what each release changed; before v1 a
// minor release may change the API, and the CHANGELOG names every such
// change with what replaced it.
const Version = "v0.2.0"
