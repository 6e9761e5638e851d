// Package snapshot takes snapshots of the replicated database and keeps
// them in a repository: its one job is the consistent copy, where it is
// stored, and how a node hands one to a peer.
//
// A snapshot is the whole crewlet-replicated.db — every domain's rows, its
// checkpoint, the operation ledger and its watermark — copied page by page
// with SQLite's online backup inside one read transaction, so the copy and
// the manifest describing it are the same instant: the transaction first
// reads every checkpoint, the rules version of each domain's computed
// columns and a hash of every table, then the backup copies the pages that
// transaction sees. Nothing waits for it: appliers go on committing beside
// a WAL reader. The Manifest names the artefact's sha256, taken_at, the
// donor, and per domain the stream, stream_created_at, generation,
// seq/applied_through and rules version.
//
// A Repository stores artefacts: the broker's own JetStream object store
// (ObjectStore, the default, so a fleet needs nothing else) or a directory
// (Dir, retention.snapshot_dir). Each keeps one artefact per node plus the
// one before it, so a put that fails half way never leaves a node with
// none. Reached answers, per domain, the highest checkpoint any stored
// snapshot covers: the trim's backup gate reads exactly that.
//
// Adoption. A node whose checkpoint is below a log's first sequence (the
// trim removed records it never applied), or that starts on an empty
// database where the trim removed the start of a log, cannot replay: it
// adopts a peer's snapshot, at boot, before it opens its database.
//
//  1. The adopter asks every data node on OfferSubject (core NATS, one
//     request, every answer gathered for a short window): each peer whose
//     copy is in service answers an Offer with its checkpoints.
//  2. It keeps the peers whose checkpoint of every log is at or past that
//     log's first sequence less one, on the same stream (stream_created_at),
//     best first, and asks one on DonateSubject(peer).
//  3. That donor takes a fresh snapshot, puts it in the broker's object
//     store (always the broker's: a directory on the donor's disk is not
//     one the adopter reads), logs statelog_snapshot_sent (sha256,
//     taken_at, to) and answers the manifest.
//  4. The adopter fetches the artefact, checks its sha256 against the
//     manifest (a mismatch is refused and the next donor asked), checks
//     the manifest still covers every log's first sequence, and installs
//     it over its database file with one rename (Install), so a kill at
//     any point leaves either the old file or the whole new one. It logs
//     statelog_adopted (donor, sha256, taken_at).
//
// The ledger and its watermark are tables of that file, so they travel
// with it. The node then boots on the new rows as on any others: its
// reader, behind the new checkpoint, is rebuilt there
// (jetstream_domain_consumer_rebuilt, drift behind_checkpoint), and a
// domain whose rules version differs from the donor's recomputes its
// computed columns (statelog_rederived) before it applies anything.
//
// Where no peer donates within the boot's wait (retention's AdoptWait, 10
// s), the node opens anyway with its replicas held: every read and write
// refuses below_floor and the node is out of service, so its seats read
// from the others. It goes on asking; the snapshot it gets is restored
// into the open database in one write transaction (RestoreInto) and each
// replica resumes on the new rows (statelog.Replica.Resume), so both
// refusals clear on their own.
package snapshot
