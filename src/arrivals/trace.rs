//! Trace replay. A trace is a CSV file (plain, gzip or zstd) with a header: a time column
//! (`t_ms`, milliseconds from the start, or a wall-clock time in one of the
//! [`TimeFormat`]s: the first line is then time 0), `key` and `user` (optional); other
//! columns are ignored. Lines are in time order, or out of it by at most a reorder window,
//! within which a heap puts them back in order.
//! [`scan`] reads it once before the run to validate every line and learn its keys and end;
//! [`TraceReplay`] then streams it in chunks, so a trace is never loaded whole. A what-if
//! [`Traffic`] speeds its clock up (`speed`) and thins or copies its lines (`scale`); copies
//! arrive a little after their original (`jitter`) and wait in a small heap until no later
//! line can come before them, so the stream stays in time order.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use csv::{ByteRecord, Reader, ReaderBuilder, Trim};
use rand::{Rng, RngExt};

use super::timestamps::{self, TimeFormat};
use super::{DrawNeeds, SimRng, Stream, StreamPlan, Traffic, stream_rng};
use crate::error::InputError;
use crate::model::{Arrival, HoldDist, NO_USER, SimTime};

/// Longest line a trace may have, in bytes: a longer one (or a file that is not text, such as
/// `/dev/zero`) is refused instead of being buffered whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Most distinct keys a trace may name.
pub const MAX_TRACE_KEYS: usize = 10_000_000;

/// The distinct keys of a trace, numbered in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct KeyDict {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl KeyDict {
    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of key `id`.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The id of a key name, if the trace has it.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    fn insert(&mut self, name: &str) -> u32 {
        if let Some(id) = self.id(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }
}

/// What a scan of a valid trace learned.
#[derive(Debug, Clone)]
pub struct TraceInfo {
    /// The trace file.
    pub(crate) path: PathBuf,
    /// Its keys (one unnamed key when it has no `key` column).
    pub(crate) keys: KeyDict,
    /// Whether it has a `user` column.
    pub(crate) has_user: bool,
    /// Number of lines (arrivals as recorded).
    pub arrivals: u64,
    /// Time of the last line, after the speed-up.
    pub(crate) last_at: SimTime,
    /// Most lines in one time-series window, after the speed-up.
    pub(crate) peak_window_arrivals: u64,
    /// How the trace is replayed: as recorded, or thinned, copied and sped up.
    pub(crate) traffic: Traffic,
    /// The busiest key's share of all arrivals.
    pub(crate) hot_key_share: f64,
    /// The busiest key (the first of equals).
    pub(crate) hot_key: u32,
    /// How its times were read: the column, the format (detected or named) and the reorder
    /// window; replays read it so.
    pub(crate) time: Box<TraceTime>,
}

/// How a trace's times are read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceTime {
    /// The time column's name (`None`: the first of `t_ms`, `timestamp`, `time`, `ts`).
    pub column: Option<String>,
    /// Its format (`None`: detected from the first line).
    pub format: Option<TimeFormat>,
    /// How the format was told, when it was detected.
    pub detected_by: Option<String>,
    /// How far back in time a line may be behind the latest before it, ns (0: never).
    pub reorder_window: SimTime,
    /// The wall-clock time of the replay's start (its earliest line), ns since 1970, for a
    /// trace of wall-clock times once scanned.
    pub start_ns: Option<i64>,
}

impl TraceTime {
    /// What the run says of it, when it is not today's `t_ms` from 0 in order: the column
    /// and format, how the format was told, the wall clock of the start and the window.
    pub fn describe(&self) -> Option<String> {
        let column = self.column.as_deref().unwrap_or("t_ms");
        let format = self.format.as_ref().unwrap_or(&TimeFormat::MsOffset);
        if column == "t_ms" && format.is_offset() && self.reorder_window == 0 {
            return None;
        }
        let mut text = format!("the trace's times are column {column} read as {format}");
        if let Some(how) = &self.detected_by {
            text += &format!(" (detected from {how})");
        }
        let start = self
            .start_ns
            .and_then(|ns| jiff::Timestamp::from_nanosecond(i128::from(ns)).ok());
        if let Some(start) = start {
            text += &format!("; time 0 is its earliest line, {start}");
        }
        if self.reorder_window > 0 {
            text += &format!(
                "; lines up to {} s out of order are replayed in order",
                self.reorder_window as f64 / 1e9
            );
        }
        Some(text)
    }
}

impl TraceTime {
    /// `text`, the time on `line` of the column `column`, in ns as written: read in the
    /// format set, or in the one detected from it when none is set yet (then kept for the
    /// lines after it). The error says why, without the file and line.
    pub(crate) fn read(&mut self, column: &str, text: &[u8], line: u64) -> Result<i64, String> {
        if self.format.is_none() {
            let (format, how) =
                timestamps::detect(column, text).map_err(|why| format!("{column}: {why}"))?;
            self.detected_by = Some(format!("{how} on line {line}"));
            self.format = Some(format);
        }
        let format = self.format.as_ref().unwrap_or(&TimeFormat::MsOffset);
        format.parse(text).ok_or_else(|| {
            let shown = String::from_utf8_lossy(text);
            match (format, &self.detected_by) {
                (TimeFormat::MsOffset, _) => {
                    format!("{column} {shown:?} is not a time: use milliseconds ≥ 0 like 12 or 12.5")
                }
                (_, Some(how)) => format!(
                    "{column} {shown:?} is not {format} like the lines before it ({how}): a column holds one format"
                ),
                (_, None) => format!("{column} {shown:?} is not {format} (arrivals.time_format)"),
            }
        })
    }
}

/// The time columns a trace or a counts file is searched for, in order, when the scenario
/// names none.
pub(crate) const TIME_COLUMNS: [&str; 4] = ["t_ms", "timestamp", "time", "ts"];

impl TraceInfo {
    /// How its times were read.
    pub fn time(&self) -> &TraceTime {
        &self.time
    }

    /// The arrivals its replay offers, expected: the lines × the traffic scale.
    pub fn expected_arrivals(&self) -> u64 {
        (self.arrivals as f64 * self.traffic.scale).round() as u64
    }

    /// The arrivals in its busiest window, expected: that window's lines × the traffic scale.
    pub fn peak_window_expected(&self) -> f64 {
        self.peak_window_arrivals as f64 * self.traffic.scale
    }
}

/// Reads the whole trace once, checking every line; `horizon`, when set, must lie after the
/// last arrival (and its copies' jitter).
pub fn scan(
    path: &Path,
    window: SimTime,
    horizon: Option<SimTime>,
    traffic: Traffic,
    time: &TraceTime,
) -> Result<TraceInfo, InputError> {
    let mut rows = TraceRows::open(path, traffic, time)?;
    let mut keys = KeyDict::default();
    let mut per_key: Vec<u64> = Vec::new();
    let (mut arrivals, mut last_at) = (0u64, 0);
    let (mut window_index, mut window_arrivals, mut peak_window_arrivals) = (0, 0u64, 0u64);
    while let Some(row) = rows.next_row()? {
        if let Some(horizon) = horizon.filter(|&h| row.at.saturating_add(traffic.reach()) >= h) {
            return Err(InputError::trace(
                path,
                row.line,
                format!(
                    "its time {} ms (from the start, as replayed{}) is not before duration_s ({} ms); raise duration_s or leave it out",
                    crate::time::fmt_ms(row.at),
                    if traffic.reach() > 0 {
                        ", plus arrivals.jitter_ms for its copies"
                    } else {
                        ""
                    },
                    crate::time::fmt_ms(horizon)
                ),
            ));
        }
        let name = std::str::from_utf8(&row.key)
            .map_err(|_| InputError::trace(path, row.line, "key is not valid UTF-8"))?;
        if keys.id(name).is_none() && keys.len() >= MAX_TRACE_KEYS {
            return Err(InputError::trace(
                path,
                row.line,
                format!("more than {MAX_TRACE_KEYS} distinct keys"),
            ));
        }
        let id = keys.insert(name) as usize;
        if id == per_key.len() {
            per_key.push(0u64);
        }
        per_key[id] += 1;
        arrivals += 1;
        last_at = row.at;
        if row.at / window != window_index {
            window_index = row.at / window;
            window_arrivals = 0;
        }
        window_arrivals += 1;
        peak_window_arrivals = peak_window_arrivals.max(window_arrivals);
    }
    if arrivals == 0 {
        return Err(InputError::trace(
            path,
            2,
            "the trace holds no arrivals: add lines after the header",
        ));
    }
    Ok(TraceInfo {
        path: path.to_path_buf(),
        keys,
        has_user: rows.columns.user.is_some(),
        arrivals,
        last_at,
        peak_window_arrivals,
        traffic,
        hot_key_share: per_key.iter().copied().max().unwrap_or(0) as f64 / arrivals as f64,
        hot_key: per_key
            .iter()
            .enumerate()
            .max_by_key(|&(id, &count)| (count, std::cmp::Reverse(id)))
            .map_or(0, |(id, _)| id as u32),
        time: Box::new(rows.resolved_time()),
    })
}

/// Streams a scanned trace as arrivals, drawing hold times (and slot bits) as it goes.
#[derive(Debug)]
pub struct TraceReplay<'a> {
    rows: Box<TraceRows>,
    info: &'a TraceInfo,
    hold: HoldDist,
    needs: DrawNeeds,
    hold_rng: SimRng,
    slot_rng: SimRng,
    traffic_rng: SimRng,
    /// Arrivals read but not yet emitted, earliest first (ties in the order they were made).
    pending: BinaryHeap<Reverse<Pending>>,
    /// How many arrivals have been made (the heap's tie-break).
    made: u64,
    /// Every later line arrives at or after this: the last line's time, or `SimTime::MAX`
    /// once the file is read.
    floor: SimTime,
}

/// An arrival waiting in the replay's heap: (time, order made, key, user).
type Pending = (SimTime, u64, u32, u64);

impl<'a> TraceReplay<'a> {
    /// Opens the trace of `info` for the stream of `plan`, from its first line, drawing holds
    /// from `seed`.
    pub fn open(info: &'a TraceInfo, plan: &StreamPlan<'_>, seed: u64) -> Result<Self, InputError> {
        Ok(TraceReplay {
            rows: Box::new(TraceRows::open(&info.path, info.traffic, &info.time)?),
            info,
            hold: plan.hold.clone(),
            needs: plan.needs,
            hold_rng: stream_rng(seed, Stream::Holds),
            slot_rng: stream_rng(seed, Stream::Slots),
            traffic_rng: stream_rng(seed, Stream::Traffic),
            pending: BinaryHeap::new(),
            made: 0,
            floor: 0,
        })
    }

    /// Replaces `chunk`'s contents with up to `max` next arrivals.
    pub fn fill(&mut self, chunk: &mut Vec<Arrival>, max: usize) -> Result<(), InputError> {
        while chunk.len() < max {
            match self.pending.peek() {
                Some(&Reverse((at, _, key, user))) if at <= self.floor => {
                    self.pending.pop();
                    chunk.push(self.arrival(at, key, user));
                }
                _ if self.floor == SimTime::MAX => break,
                _ => self.read_line()?,
            }
        }
        Ok(())
    }

    /// Reads the next line into the heap as its copies (none when thinned away).
    fn read_line(&mut self) -> Result<(), InputError> {
        let Some(row) = self.rows.next_row()? else {
            self.floor = SimTime::MAX;
            return Ok(());
        };
        let key = std::str::from_utf8(&row.key)
            .ok()
            .and_then(|name| self.info.keys.id(name));
        let line = row.line;
        let Some(key) = key else {
            return Err(InputError::trace(
                &self.info.path,
                line,
                "the trace changed since it was checked",
            ));
        };
        let (at, user) = (row.at, row.user.unwrap_or(NO_USER));
        self.floor = at;
        for copy in 0..self.copies() {
            let (at, user) = if copy == 0 {
                (at, user)
            } else {
                let jitter = self.info.traffic.jitter;
                let bits = self.traffic_rng.next_u64();
                let offset = crate::model::random::bounded(bits, jitter + 1);
                (at + offset, copy_user(user, copy))
            };
            self.pending.push(Reverse((at, self.made, key, user)));
            self.made += 1;
        }
        Ok(())
    }

    /// How many arrivals the next line makes: `⌊scale⌋`, plus one with probability
    /// `scale − ⌊scale⌋` (no draw when the scale is whole).
    fn copies(&mut self) -> u64 {
        let scale = self.info.traffic.scale;
        let whole = scale.floor();
        let extra = scale - whole > 0.0 && self.traffic_rng.random::<f64>() < scale - whole;
        whole as u64 + u64::from(extra)
    }

    fn arrival(&mut self, at: SimTime, key: u32, user: u64) -> Arrival {
        let hold = self.hold.sample(&mut self.hold_rng);
        let random_bits = if self.needs.slot_bits {
            self.slot_rng.next_u64()
        } else {
            0
        };
        Arrival {
            at,
            hold,
            random_bits,
            user,
            key,
            endpoint: 0,
        }
    }
}

/// The user of a line's `copy`-th extra copy: another user (a hash of the original and the
/// copy number), so that `hash-user` spreads copies as it would spread more people.
fn copy_user(user: u64, copy: u64) -> u64 {
    if user == NO_USER {
        return NO_USER;
    }
    let mixed = crate::model::rows::mix64(user ^ crate::model::rows::mix64(copy));
    if mixed == NO_USER { 0 } else { mixed }
}

/// Where the known columns are.
#[derive(Debug, Clone, Copy)]
struct Columns {
    time: usize,
    key: Option<usize>,
    user: Option<usize>,
}

/// One parsed line.
struct Row<'r> {
    line: u64,
    at: SimTime,
    key: Cow<'r, [u8]>,
    user: Option<u64>,
}

/// A line read but held back by the reorder window: (time as written, line, key, user).
type Held = (i64, u64, Box<[u8]>, Option<u64>);

/// The trace file's bytes, decompressed when it is compressed.
struct TraceBytes(Box<dyn Read + Send>);

impl std::fmt::Debug for TraceBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceBytes")
    }
}

impl Read for TraceBytes {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

/// The trace's lines, parsed and checked one at a time, in time order.
#[derive(Debug)]
struct TraceRows {
    path: PathBuf,
    reader: Reader<LineGuard<BufReader<TraceBytes>>>,
    columns: Columns,
    time: TraceTime,
    /// The time column's name.
    column: String,
    record: ByteRecord,
    line: u64,
    /// The latest time read so far as written, and its line.
    latest: Option<(i64, u64)>,
    /// Lines within the reorder window of the latest, earliest first.
    held: BinaryHeap<Reverse<Held>>,
    /// Whether the file is read to its end.
    ended: bool,
    /// The time the replay starts from: 0 for times from the start, else the first line's.
    origin: Option<i64>,
    traffic: Traffic,
}

/// The trace file's bytes: decompressed as they are read when its first bytes are gzip's or
/// zstd's magic numbers, else as they are.
pub(crate) fn open_decompressed(path: &Path) -> Result<Box<dyn Read + Send>, InputError> {
    const GZIP: [u8; 2] = [0x1f, 0x8b];
    const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    let cannot = |err: io::Error| InputError::file(path, format!("cannot read the trace: {err}"));
    let file = File::open(path).map_err(cannot)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(cannot)?;
    Ok(if head.starts_with(&GZIP) {
        Box::new(flate2::bufread::MultiGzDecoder::new(reader))
    } else if head.starts_with(&ZSTD) {
        Box::new(zstd::stream::read::Decoder::with_buffer(reader).map_err(cannot)?)
    } else {
        Box::new(reader)
    })
}

/// A reader that fails on a line longer than [`MAX_LINE_BYTES`], so the CSV parser never
/// buffers an unbounded record, and on a quote left open at the end of its line. The csv
/// crate lets a quoted field run over line breaks (and to the end of the file), so one stray
/// quote would swallow every arrival after it into one key; a trace's fields never hold a line
/// break, so a quote must close on its own line (`""` inside a quoted field is a quote).
#[derive(Debug)]
struct LineGuard<R> {
    inner: R,
    line_bytes: usize,
    /// The line being read, from 1.
    line: u64,
    /// Whether a quote is open.
    in_quote: bool,
}

/// A quote opened on `line` and not closed before the line ended.
#[derive(Debug)]
struct UnclosedQuote {
    line: u64,
}

impl std::fmt::Display for UnclosedQuote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a quote (\") is not closed before the end of the line: close it (a field never spans lines), or write a quote inside a quoted field as \"\""
        )
    }
}

impl std::error::Error for UnclosedQuote {}

impl<R: Read> LineGuard<R> {
    fn new(inner: R) -> Self {
        LineGuard {
            inner,
            line_bytes: 0,
            line: 1,
            in_quote: false,
        }
    }

    /// Follows the quotes and lines of `bytes`; an error at a line break inside a quote.
    fn check_quotes(&mut self, bytes: &[u8]) -> io::Result<()> {
        for &byte in bytes {
            match byte {
                b'"' => self.in_quote = !self.in_quote,
                b'\n' | b'\r' if self.in_quote => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        UnclosedQuote { line: self.line },
                    ));
                }
                b'\n' => self.line += 1,
                _ => {}
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for LineGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if read == 0 && self.in_quote {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                UnclosedQuote { line: self.line },
            ));
        }
        let bytes = &buf[..read];
        self.line_bytes = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last) => read - last - 1,
            None => self.line_bytes + read,
        };
        if self.line_bytes > MAX_LINE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a line is longer than {} MiB: a trace is a text CSV file",
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        self.check_quotes(&buf[..read])?;
        Ok(read)
    }
}

impl TraceRows {
    fn open(path: &Path, traffic: Traffic, time: &TraceTime) -> Result<Self, InputError> {
        // Checked before opening: opening a FIFO would wait for a writer.
        crate::input::check_regular(path, "the trace")?;
        let bytes = open_decompressed(path)?;
        let mut reader = ReaderBuilder::new()
            .trim(Trim::All)
            .from_reader(LineGuard::new(BufReader::with_capacity(
                1 << 16,
                TraceBytes(bytes),
            )));
        let header = reader
            .byte_headers()
            .map_err(|err| csv_error(path, 1, &err))?
            .clone();
        let find = |name: &str| header.iter().position(|field| field == name.as_bytes());
        let column = match &time.column {
            Some(name) => find(name).map(|i| (i, name.clone())).ok_or_else(|| {
                InputError::trace(
                    path,
                    1,
                    format!("the header has no column {name:?} (arrivals.time_column)"),
                )
            })?,
            None => TIME_COLUMNS
                .iter()
                .find_map(|name| find(name).map(|i| (i, (*name).to_owned())))
                .ok_or_else(|| {
                    InputError::trace(
                        path,
                        1,
                        "the header has no time column: call it t_ms (ms from the start), timestamp, time or ts, or name it in arrivals.time_column; a trace may also have key and user",
                    )
                })?,
        };
        Ok(TraceRows {
            path: path.to_path_buf(),
            reader,
            columns: Columns {
                time: column.0,
                key: find("key"),
                user: find("user"),
            },
            time: time.clone(),
            column: column.1,
            record: ByteRecord::new(),
            line: 1,
            latest: None,
            held: BinaryHeap::new(),
            ended: false,
            origin: None,
            traffic,
        })
    }

    /// How its times were read, once the first line has told its format.
    fn resolved_time(&self) -> TraceTime {
        TraceTime {
            column: Some(self.column.clone()),
            start_ns: self.origin,
            ..self.time.clone()
        }
    }

    fn error(&self, message: String) -> InputError {
        InputError::trace(&self.path, self.line, message)
    }

    /// The next line in time order: at once without a reorder window, else once no line
    /// still to come may be earlier.
    fn next_row(&mut self) -> Result<Option<Row<'_>>, InputError> {
        let window = i64::try_from(self.time.reorder_window).unwrap_or(i64::MAX);
        if window == 0 {
            let Some(written) = self.read_line()? else {
                return Ok(None);
            };
            let at = self.since_start(written);
            let (key, user) = self.key_and_user()?;
            return Ok(Some(Row {
                line: self.line,
                at,
                key: Cow::Borrowed(key),
                user,
            }));
        }
        loop {
            let due = self.held.peek().is_some_and(|Reverse(held)| {
                self.ended
                    || self
                        .latest
                        .is_some_and(|(latest, _)| held.0 <= latest.saturating_sub(window))
            });
            if due {
                let Some(Reverse((written, line, key, user))) = self.held.pop() else {
                    unreachable!("a held line was just seen");
                };
                let at = self.since_start(written);
                return Ok(Some(Row {
                    line,
                    at,
                    key: Cow::Owned(key.into_vec()),
                    user,
                }));
            }
            if self.ended {
                return Ok(None);
            }
            match self.read_line()? {
                None => self.ended = true,
                Some(written) => {
                    let (key, user) = self.key_and_user()?;
                    let key: Box<[u8]> = key.into();
                    self.held.push(Reverse((written, self.line, key, user)));
                }
            }
        }
    }

    /// Reads the next line and its time as written, checked against the latest before it;
    /// `None` at the end.
    fn read_line(&mut self) -> Result<Option<i64>, InputError> {
        let more = self
            .reader
            .read_byte_record(&mut self.record)
            .map_err(|err| csv_error(&self.path, self.line + 1, &err))?;
        if !more {
            return Ok(None);
        }
        self.line = self.record.position().map_or(self.line + 1, |p| p.line());
        let text = self.record.get(self.columns.time).unwrap_or_default();
        let written = self
            .time
            .read(&self.column, text, self.line)
            .map_err(|why| InputError::trace(&self.path, self.line, why))?;
        self.check_order(written)?;
        Ok(Some(written))
    }

    /// The current line's time as written, for messages.
    fn time_text(&self) -> String {
        String::from_utf8_lossy(self.record.get(self.columns.time).unwrap_or_default()).into_owned()
    }

    /// Refuses a line further back than the reorder window behind the latest before it.
    fn check_order(&mut self, written: i64) -> Result<(), InputError> {
        let window = i64::try_from(self.time.reorder_window).unwrap_or(i64::MAX);
        match self.latest {
            Some((latest, line)) if written < latest.saturating_sub(window) => {
                let behind =
                    crate::time::fmt_ms(u64::try_from(latest - written).unwrap_or(u64::MAX));
                Err(self.error(if window == 0 {
                    format!(
                        "{} {:?} is {behind} ms before line {line}'s: times must not decrease (set arrivals.reorder_window_s to replay lines out of order by up to that many seconds)",
                        self.column,
                        self.time_text()
                    )
                } else {
                    format!(
                        "{} {:?} is {behind} ms behind line {line}'s, more than arrivals.reorder_window_s ({} s): raise it, or sort the trace",
                        self.column,
                        self.time_text(),
                        self.time.reorder_window as f64 / 1e9
                    )
                }))
            }
            Some((latest, _)) if written <= latest => Ok(()),
            _ => {
                self.latest = Some((written, self.line));
                Ok(())
            }
        }
    }

    /// A time as written, from the replay's start, after the speed-up.
    fn since_start(&mut self, written: i64) -> SimTime {
        let offset = self.time.format.as_ref().is_some_and(TimeFormat::is_offset);
        let origin = if offset {
            0
        } else {
            *self.origin.get_or_insert(written)
        };
        self.traffic
            .warp(u64::try_from(written.saturating_sub(origin)).unwrap_or(0))
    }

    /// The current line's key and user.
    fn key_and_user(&self) -> Result<(&[u8], Option<u64>), InputError> {
        let field = |i: usize| self.record.get(i).unwrap_or_default();
        let key = self.columns.key.map_or(&b""[..], field);
        let user = match self.columns.user {
            Some(i) => Some(parse_user(field(i)).ok_or_else(|| {
                self.error(format!(
                    "user {:?} is not a user id: use an integer from 0 to {}",
                    String::from_utf8_lossy(field(i)),
                    NO_USER - 1
                ))
            })?),
            None => None,
        };
        Ok((key, user))
    }
}

fn csv_error(path: &Path, line: u64, err: &csv::Error) -> InputError {
    let line = err.position().map_or(line, |p| p.line());
    match err.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => InputError::trace(
            path,
            line,
            format!("has {len} fields but the header has {expected_len}"),
        ),
        csv::ErrorKind::Io(io) => {
            match io.get_ref().and_then(|e| e.downcast_ref::<UnclosedQuote>()) {
                Some(unclosed) => InputError::trace(path, unclosed.line, unclosed.to_string()),
                None => InputError::file(
                    path,
                    format!(
                        "cannot read the trace {}: {io} (a truncated or corrupt archive, or a file that changed?)",
                        match line.saturating_sub(1) {
                            0 => "before its first line".to_owned(),
                            read => format!("after line {read}"),
                        }
                    ),
                ),
            }
        }
        _ => InputError::trace(path, line, format!("malformed CSV: {err}")),
    }
}

/// Parses decimal milliseconds (`12`, `12.5`, `0.000001`) exactly into nanoseconds, rounding
/// digits beyond the nanosecond half up. Times past about 115 days are refused.
pub fn parse_ms(text: &[u8]) -> Option<SimTime> {
    const MAX_MS: u64 = 10_000_000_000;
    let (whole, frac) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &b""[..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) {
        return None;
    }
    let whole_ms: u64 = if whole.is_empty() {
        0
    } else {
        std::str::from_utf8(whole).ok()?.parse().ok()?
    };
    if whole_ms > MAX_MS {
        return None;
    }
    let mut frac_ns = 0u64;
    for i in 0..6 {
        frac_ns = frac_ns * 10 + frac.get(i).map_or(0, |d| u64::from(d - b'0'));
    }
    let round_up = frac.get(6).is_some_and(|&d| d >= b'5');
    Some(whole_ms * 1_000_000 + frac_ns + u64::from(round_up))
}

fn parse_user(text: &[u8]) -> Option<u64> {
    let user: u64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    (user != NO_USER).then_some(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_milliseconds_exactly() {
        assert_eq!(parse_ms(b"0"), Some(0));
        assert_eq!(parse_ms(b"12.5"), Some(12_500_000));
        assert_eq!(parse_ms(b".25"), Some(250_000));
        assert_eq!(parse_ms(b"1.0000004"), Some(1_000_000));
        assert_eq!(parse_ms(b"1.0000005"), Some(1_000_001));
        for bad in [
            &b""[..],
            b".",
            b"-1",
            b"1e3",
            b"abc",
            b"1.2.3",
            b"99999999999",
        ] {
            assert_eq!(parse_ms(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
