// Package kbrec is the knowledge base's record contract: the record kinds,
// their payloads as they go on the wire (the JSON inside
// record.Record.Payload), the subjects the records are arbitrated on, the
// scopes they declare and the values a record carries (a space's editing
// setting). Both the apply side (kbapply) and the decide side (kb) read
// it; it imports nothing of the project but the engine vocabulary.
package kbrec
