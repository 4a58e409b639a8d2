/**
 * Time zones as EventBridge Scheduler is given them (ScheduleExpressionTimezone), and wall-clock
 * arithmetic in a zone. Pure: no clock.
 *
 * Which names Scheduler accepts is not spelled out in its docs ("The timezone in which the scheduling
 * expression is evaluated", API_CreateSchedule; examples use names such as America/New_York,
 * Europe/Helsinki, Asia/Kolkata). This reference is deliberately strict: it accepts exactly the
 * canonical IANA zone names, case as written in the tz database, plus "UTC". The list below is
 * aws-cdk-lib's `TimeZone` ("Canonical names of the IANA time zones, derived from the IANA Time Zone
 * Database", aws-cdk-lib 2.276.0 core/lib/time-zone), which CDK offers for Scheduler schedules, minus
 * the legacy non-geographic names (EST, MST, HST, CET, EET, WET, MET, CST6CDT, EST5EDT, MST7MDT,
 * PST8PDT, Factory) that tzdata 2024b turned into links (EST is America/Panama in current data).
 *
 * Why strict: JavaScript's Intl accepts any case ('europe/berlin', 'utc') and aliases ('US/Pacific',
 * 'EST'), and even canonicalises to ICU's legacy IDs ('Asia/Kolkata' -> 'Asia/Calcutta'), so a name
 * Intl likes is no evidence the service likes it. An app that sends only canonical names is safe
 * whatever Scheduler does with aliases.
 */

const CANONICAL_BY_AREA: ReadonlyArray<readonly [string, string]> = [
  ["Africa", "Abidjan Algiers Bissau Cairo Casablanca Ceuta El_Aaiun Johannesburg Juba Khartoum Lagos Maputo Monrovia Nairobi Ndjamena Sao_Tome Tripoli Tunis Windhoek"],
  ["America", "Adak Anchorage Araguaina Argentina/Buenos_Aires Argentina/Catamarca Argentina/Cordoba Argentina/Jujuy Argentina/La_Rioja Argentina/Mendoza Argentina/Rio_Gallegos Argentina/Salta Argentina/San_Juan Argentina/San_Luis Argentina/Tucuman Argentina/Ushuaia Asuncion Bahia Bahia_Banderas Barbados Belem Belize Boa_Vista Bogota Boise Cambridge_Bay Campo_Grande Cancun Caracas Cayenne Chicago Chihuahua Ciudad_Juarez Costa_Rica Cuiaba Danmarkshavn Dawson Dawson_Creek Denver Detroit Edmonton Eirunepe El_Salvador Fort_Nelson Fortaleza Glace_Bay Goose_Bay Grand_Turk Guatemala Guayaquil Guyana Halifax Havana Hermosillo Indiana/Indianapolis Indiana/Knox Indiana/Marengo Indiana/Petersburg Indiana/Tell_City Indiana/Vevay Indiana/Vincennes Indiana/Winamac Inuvik Iqaluit Jamaica Juneau Kentucky/Louisville Kentucky/Monticello La_Paz Lima Los_Angeles Maceio Managua Manaus Martinique Matamoros Mazatlan Menominee Merida Metlakatla Mexico_City Miquelon Moncton Monterrey Montevideo New_York Nome Noronha North_Dakota/Beulah North_Dakota/Center North_Dakota/New_Salem Nuuk Ojinaga Panama Paramaribo Phoenix Port-au-Prince Porto_Velho Puerto_Rico Punta_Arenas Rankin_Inlet Recife Regina Resolute Rio_Branco Santarem Santiago Santo_Domingo Sao_Paulo Scoresbysund Sitka St_Johns Swift_Current Tegucigalpa Thule Tijuana Toronto Vancouver Whitehorse Winnipeg Yakutat Yellowknife"],
  ["Antarctica", "Casey Davis Macquarie Mawson Palmer Rothera Troll"],
  ["Asia", "Almaty Amman Anadyr Aqtau Aqtobe Ashgabat Atyrau Baghdad Baku Bangkok Barnaul Beirut Bishkek Chita Choibalsan Colombo Damascus Dhaka Dili Dubai Dushanbe Famagusta Gaza Hebron Ho_Chi_Minh Hong_Kong Hovd Irkutsk Jakarta Jayapura Jerusalem Kabul Kamchatka Karachi Kathmandu Khandyga Kolkata Krasnoyarsk Kuching Macau Magadan Makassar Manila Nicosia Novokuznetsk Novosibirsk Omsk Oral Pontianak Pyongyang Qatar Qostanay Qyzylorda Riyadh Sakhalin Samarkand Seoul Shanghai Singapore Srednekolymsk Taipei Tashkent Tbilisi Tehran Thimphu Tokyo Tomsk Ulaanbaatar Urumqi Ust-Nera Vladivostok Yakutsk Yangon Yekaterinburg Yerevan"],
  ["Atlantic", "Azores Bermuda Canary Cape_Verde Faroe Madeira South_Georgia Stanley"],
  ["Australia", "Adelaide Brisbane Broken_Hill Darwin Eucla Hobart Lindeman Lord_Howe Melbourne Perth Sydney"],
  ["Etc", "GMT GMT+1 GMT+10 GMT+11 GMT+12 GMT+2 GMT+3 GMT+4 GMT+5 GMT+6 GMT+7 GMT+8 GMT+9 GMT-1 GMT-10 GMT-11 GMT-12 GMT-13 GMT-14 GMT-2 GMT-3 GMT-4 GMT-5 GMT-6 GMT-7 GMT-8 GMT-9 UTC"],
  ["Europe", "Andorra Astrakhan Athens Belgrade Berlin Brussels Bucharest Budapest Chisinau Dublin Gibraltar Helsinki Istanbul Kaliningrad Kirov Kyiv Lisbon London Madrid Malta Minsk Moscow Paris Prague Riga Rome Samara Saratov Simferopol Sofia Tallinn Tirane Ulyanovsk Vienna Vilnius Volgograd Warsaw Zurich"],
  ["Indian", "Chagos Maldives Mauritius"],
  ["Pacific", "Apia Auckland Bougainville Chatham Easter Efate Fakaofo Fiji Galapagos Gambier Guadalcanal Guam Honolulu Kanton Kiritimati Kosrae Kwajalein Marquesas Nauru Niue Norfolk Noumea Pago_Pago Palau Pitcairn Port_Moresby Rarotonga Tahiti Tarawa Tongatapu"],
];

const CANONICAL = new Set<string>(['UTC']);
for (const [area, names] of CANONICAL_BY_AREA) for (const name of names.split(' ')) CANONICAL.add(area ? `${area}/${name}` : name);
const LOWERCASE = new Map([...CANONICAL].map((name) => [name.toLowerCase(), name]));

export type TimeZoneVerdict = { ok: true } | { ok: false; reason: string };

/** Whether Scheduler (as this reference models it) accepts this ScheduleExpressionTimezone. */
export function checkTimeZone(name: string): TimeZoneVerdict {
  if (CANONICAL.has(name)) return { ok: true };
  const sameLetters = LOWERCASE.get(name.toLowerCase());
  if (sameLetters) return { ok: false, reason: `time zone names are case-sensitive: write ${sameLetters}` };
  const resolved = intlResolve(name);
  if (resolved) {
    const canonical = CANONICAL.has(resolved) ? resolved : undefined;
    return { ok: false, reason: `"${name}" is a legacy alias, not a canonical IANA zone name${canonical ? `; write ${canonical}` : ''}` };
  }
  return { ok: false, reason: `"${name}" is not an IANA time zone name (e.g. UTC, Europe/Berlin, America/New_York)` };
}

function intlResolve(name: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** A wall-clock reading (month 1-12). */
export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall clock in `zone` at instant `t` (ms), to the second. */
export function wallClockAt(t: number, zone: string): WallClock {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(new Date(t))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second! };
}

function wallAsUtc(w: WallClock): number {
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
}

function sameWall(a: WallClock, b: WallClock): boolean {
  return wallAsUtc(a) === wallAsUtc(b);
}

/**
 * The first instant whose wall clock in `zone` reads `w`, or undefined when the clocks skip it
 * (a daylight-saving gap). A reading that happens twice (the autumn overlap) gives the first.
 */
export function instantOfWallClock(w: WallClock, zone: string): number | undefined {
  const naive = wallAsUtc(w);
  const offsets = new Set([-86_400_000, 0, 86_400_000].map((d) => wallAsUtc(wallClockAt(naive + d, zone)) - (naive + d - ((naive + d) % 1000))));
  const hits = [...offsets].map((off) => naive - off).filter((t) => sameWall(wallClockAt(t, zone), w));
  return hits.length ? Math.min(...hits) : undefined;
}

/** Whether the wall-clock reading at `t` already happened earlier (the second pass of an autumn overlap). */
export function isRepeatedWallClock(t: number, zone: string): boolean {
  const w = wallClockAt(t, zone);
  return [30, 60, 120].some((minutes) => sameWall(wallClockAt(t - minutes * 60_000, zone), w));
}
