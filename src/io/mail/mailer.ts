// Outgoing mail: SMTP through nodemailer when SMTP_URL is set, otherwise the log (a local instance can still
// do email login: the code is in its output). Sending never holds up a request: `send` returns at once, a
// failure is logged, and `close` waits for the mails in flight before closing the connection.
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../../config.js';
import type { Log } from '../../log.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): void;
  close(): Promise<void>;
}

export function createMailer(config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'production'>, log: Log): Mailer {
  if (config.smtpUrl === null) {
    if (config.production) log.warn('SMTP_URL is not set: login codes are written to the log');
    return new LogMailer(log);
  }
  return new SmtpMailer(config.smtpUrl, config.mailFrom, log);
}

class LogMailer implements Mailer {
  constructor(private readonly log: Log) {}

  send(mail: Mail): void {
    this.log.info(`mail to ${mail.to} (SMTP_URL is not set): ${mail.subject}\n${mail.text}`);
  }

  async close(): Promise<void> {}
}

class SmtpMailer implements Mailer {
  private readonly transport: Transporter;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    url: string,
    private readonly from: string,
    private readonly log: Log,
  ) {
    // Bounded waits: nodemailer's defaults (minutes) would let a dead server hold a mail, and a shutdown, that long.
    this.transport = nodemailer.createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  }

  send(mail: Mail): void {
    const sending = this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text }).then(
      () => undefined,
      (err: unknown) => this.log.error(`could not send mail to ${mail.to}`, err),
    );
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    this.transport.close();
  }
}
