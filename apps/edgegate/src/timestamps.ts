/**
 * RFC 3339 timestamps on the wire (read with any offset, written in UTC with `Z`);
 * integers in the database. Decision times carry microseconds (the decision clock's
 * unit), everything else milliseconds. The parser is the kit's, shared by every app.
 */
export {
  formatTimestampMicros as formatMicros,
  formatTimestampMillis as formatMillis,
  parseTimestampMicros as parseMicros,
  parseTimestampMillis as parseMillis,
} from '@gatehouse/kit/timestamps.ts'
