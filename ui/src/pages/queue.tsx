// One queue: its counts live over the queue's own stats stream (GET /api/v1/events/queues/:name), its
// throughput and oldest pending age re-read after activity, and pause/resume.
import { useState } from 'preact/hooks';
import { enc, get, post } from '../api';
import { Action, LoadError, Loading, PageHeader, Stat, useAsync } from '../components';
import { count, dateTime, duration } from '../format';
import { useCoalesced, useNow, useStream } from '../live';
import { href } from '../router';
import { can } from '../session';
import type { Counts, QueueStats } from '../types';

export function QueuePage({ name }: { name: string }) {
  const now = useNow();
  const [readAt, setReadAt] = useState(Date.now());
  const stats = useAsync(async () => {
    const s = await get<QueueStats>(`/api/v1/queues/${enc(name)}/stats`);
    setReadAt(Date.now());
    return s;
  }, [name]);
  const reread = useCoalesced(stats.reload, 1000);
  const [live, setLive] = useState(false);
  useStream(
    stats.data ? `/api/v1/events/queues/${enc(name)}` : null,
    (e) => {
      if (e.event !== 'queue.stats') return;
      setLive(true);
      const c = e.data as unknown as Counts;
      stats.update((s) => ({ ...s, ...pickCounts(c) }));
      // Counts come with the event; throughput and the oldest age need a read.
      reread();
    },
    () => setLive(false),
  );
  if (stats.error && !stats.data) return <LoadError error={stats.error} what="Queue" />;
  const s = stats.data;
  if (!s) return <Loading />;
  const age = s.oldest_pending_age_seconds === null ? null : s.oldest_pending_age_seconds + (now - readAt) / 1000;
  return (
    <>
      <PageHeader
        title={
          <>
            Queue {name} {s.paused && <span class="badge status-paused">paused</span>} {live && <span class="live live-live">live</span>}
          </>
        }
      >
        <a class="btn btn-plain" href={href('/jobs', { queue: name })}>
          Jobs
        </a>
        <a class="btn btn-plain" href={href('/dlq', { queue: name })}>
          Dead letters
        </a>
        {can('queues:write') &&
          (s.paused ? (
            <Action kind="primary" run={() => post(`/api/v1/queues/${enc(name)}/resume`).then(stats.reload)} done="Resumed">
              Resume
            </Action>
          ) : (
            <Action run={() => post(`/api/v1/queues/${enc(name)}/pause`).then(stats.reload)} done="Paused: claims answer no jobs until it is resumed">
              Pause
            </Action>
          ))}
      </PageHeader>
      <section class="stats" data-testid="queue-stats">
        <Stat label="pending" value={count(s.pending)} />
        <Stat label="scheduled" value={count(s.scheduled)} />
        <Stat label="processing" value={count(s.processing)} />
        <Stat label="dead letters" value={count(s.deadletter)} tone={s.deadletter > 0 ? 'bad' : undefined} />
        <Stat label="completed (kept)" value={count(s.completed)} />
        <Stat label="cancelled (kept)" value={count(s.cancelled)} />
      </section>
      <section class="stats">
        <Stat label="completed, last minute" value={count(s.throughput_last_minute.completed)} tone="good" />
        <Stat label="failed attempts, last minute" value={count(s.throughput_last_minute.failed)} tone={s.throughput_last_minute.failed > 0 ? 'warn' : undefined} />
        <Stat label="oldest pending" value={age === null ? '—' : duration(age)} hint="since the longest-waiting pending job became due" tone={age !== null && age > 300 ? 'warn' : undefined} />
      </section>
      <p class="muted">Read {dateTime(new Date(readAt).toISOString())}.</p>
    </>
  );
}

function pickCounts(c: Counts): Counts {
  return { pending: c.pending, scheduled: c.scheduled, processing: c.processing, completed: c.completed, deadletter: c.deadletter, cancelled: c.cancelled };
}
