import { useState } from 'preact/hooks';
import { ApiError } from '../api';
import { messageOf } from '../components';
import { sessionEndedBecause, signIn } from '../session';

export function SignIn() {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(sessionEndedBecause());
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(key.trim());
      setKey('');
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'This API key is not valid (unknown or revoked).' : messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="signin">
      <form class="panel" method="post" onSubmit={submit}>
        <h1>Sluice</h1>
        <p class="muted">Sign in with an API key. It is exchanged for a session token kept in this tab's memory only: reloading the page signs you out.</p>
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck={false} required placeholder="svc_live_… or svc_test_…" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        {error && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="btn btn-primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}
