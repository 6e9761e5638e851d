// Package trackrec is the tracker's record contract: the record kinds and
// the format version each is stamped with, their payloads as they go on
// the wire (the JSON inside record.Record.Payload), the subjects the
// records are arbitrated on, the scopes they declare, and the values a
// record carries (statuses, priorities, item types, edge kinds). Both the
// apply side (trackapply) and the decide side (tracker) read it; it
// imports nothing of the project but the engine vocabulary.
package trackrec
