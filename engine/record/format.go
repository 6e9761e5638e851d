//go:build !crewlet_nextformat

package record

// FormatVersion is the newest record format this build reads. A record is
// stamped with the lowest version that can apply it whole (each domain's
// record contract keeps the table: its Kinds): version 2 added the
// tracker's item fields (priority, due, estimate, type), so only a record
// carrying one of them is stamped 2; version 3 added the lifecycle kinds
// (comments edited, projects updated, the trash emptied, bulk sets, pages
// archived, moved, trashed and commented, capacity changes), which a
// build at version 2 does not know. An older build retains such a record
// whole, with everything its scope meets, rather than apply it in part or
// not at all and leave its rows different from its peers' for good.
const FormatVersion = 3
