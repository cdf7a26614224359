import type { Display } from './rfb/session.js'
import { TextScreen, type Rectangle } from './rfb/text-screen.js'

/** X11 keysyms (RFC 6143 §7.5.4) the login prompt acts on. */
const KEY = { backspace: 0xff08, tab: 0xff09, enter: 0xff0d, keypadEnter: 0xff8d } as const

/** What the lab's console shows of the object it belongs to. */
export interface ConsoleSubject {
  readonly kind: 'VM' | 'host'
  readonly name: string
  readonly hostname: string
  readonly kernel: string
}

/**
 * The lab's simulated text console: a short boot log, then a login prompt
 * that echoes what is typed. Enter after a user name asks for a password
 * (not echoed), Enter after that refuses it and prompts again: the lab has no
 * accounts, only a screen to type on.
 */
export class LabTerminal implements Display {
  readonly name: string
  readonly #screen: TextScreen
  readonly #hostname: string
  #state: 'login' | 'password' = 'login'
  #typed = 0

  constructor(subject: ConsoleSubject, screen = new TextScreen()) {
    this.#screen = screen
    this.#hostname = subject.hostname
    this.name = subject.name
    screen.write(`Keel lab ${subject.kind} console: ${subject.name}\n`, 'bright')
    screen.write(`Booting Linux ${subject.kernel} ...\n`)
    for (const unit of ['Journal Service', 'Network Configuration', 'OpenSSH server daemon', 'Getty on tty1']) {
      screen.write('[  ')
      screen.write('OK', 'ok')
      screen.write(`  ] Started ${unit}.\n`)
    }
    screen.write(`\n${subject.hostname} login: `)
  }

  get width(): number {
    return this.#screen.width
  }

  get height(): number {
    return this.#screen.height
  }

  get screen(): TextScreen {
    return this.#screen
  }

  takeDirty(): Rectangle[] {
    return this.#screen.takeDirty()
  }

  render(area: Rectangle): { readonly area: Rectangle; readonly rgb: Uint8Array } {
    return this.#screen.render(area)
  }

  key(keysym: number, down: boolean): void {
    if (!down) return
    const screen = this.#screen
    if (keysym === KEY.enter || keysym === KEY.keypadEnter) {
      this.#enter()
    } else if (keysym === KEY.backspace) {
      if (this.#typed > 0) {
        this.#typed--
        if (this.#state === 'login') screen.backspace()
      }
    } else if (keysym === KEY.tab || (keysym >= 0x20 && keysym <= 0x7e)) {
      this.#typed++
      if (this.#state === 'login') screen.write(keysym === KEY.tab ? ' ' : String.fromCharCode(keysym))
    }
  }

  #enter(): void {
    const screen = this.#screen
    if (this.#state === 'login' && this.#typed > 0) {
      this.#state = 'password'
      screen.write('\nPassword: ')
    } else if (this.#state === 'password') {
      this.#state = 'login'
      screen.write(`\n\nLogin incorrect\n${this.#hostname} login: `)
    } else {
      screen.write(`\n${this.#hostname} login: `)
    }
    this.#typed = 0
  }
}
