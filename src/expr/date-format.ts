/** `date_format()` patterns: a small, documented token set rendered in UTC. */

/**
 * Tokens (UTC): YYYY year, YY two-digit year, MM/M month, DD/D day, HH/H hour (24h), mm/m minute,
 * ss/s second, SSS milliseconds, Z the literal offset "Z". Text inside [brackets] is copied as is;
 * any other character is copied as is.
 */
const TOKEN = /\[([^\]]*)\]|YYYY|YY|SSS|MM|DD|HH|mm|ss|M|D|H|m|s|Z/g;

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

export function formatDate(d: Date, pattern: string): string {
  if (Number.isNaN(d.getTime())) throw new Error('date_format: invalid date');
  return pattern.replace(TOKEN, (tok: string, literal: string | undefined) => {
    if (literal !== undefined) return literal;
    switch (tok) {
      case 'YYYY':
        return pad(d.getUTCFullYear(), 4);
      case 'YY':
        return pad(d.getUTCFullYear() % 100);
      case 'MM':
        return pad(d.getUTCMonth() + 1);
      case 'M':
        return String(d.getUTCMonth() + 1);
      case 'DD':
        return pad(d.getUTCDate());
      case 'D':
        return String(d.getUTCDate());
      case 'HH':
        return pad(d.getUTCHours());
      case 'H':
        return String(d.getUTCHours());
      case 'mm':
        return pad(d.getUTCMinutes());
      case 'm':
        return String(d.getUTCMinutes());
      case 'ss':
        return pad(d.getUTCSeconds());
      case 's':
        return String(d.getUTCSeconds());
      case 'SSS':
        return pad(d.getUTCMilliseconds(), 3);
      default:
        return 'Z';
    }
  });
}
