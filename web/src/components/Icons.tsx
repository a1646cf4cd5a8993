/**
 * The app's icons, drawn inline as SVG: an emoji or a rare symbol shows as an
 * empty box on a machine without a font that has it (many Linux desktops,
 * kiosks, phones with few fonts), and an inline path needs no request the CSP
 * would have to allow. Each is decorative: the button around it carries the name.
 */
import type { ComponentChildren } from 'preact';

function Icon({ size = 18, children }: { size?: number; children: ComponentChildren }) {
  return (
    <svg
      class="icon"
      viewBox="0 0 24 24"
      width={size}
      height={size}
      aria-hidden="true"
      focusable="false"
      fill="none"
      stroke="currentColor"
      stroke-width="1.9"
      stroke-linecap="round"
      stroke-linejoin="round"
    >
      {children}
    </svg>
  );
}

export const CloseIcon = ({ size }: { size?: number }) => (
  <Icon size={size}>
    <path d="M6 6l12 12M18 6 6 18" />
  </Icon>
);

export const TrashIcon = () => (
  <Icon>
    <path d="M4 7h16M10 11v6M14 11v6M6 7l1 12a2 2 0 0 0 2 2h6a2 2 0 0 0 2-2l1-12M9 7V4h6v3" />
  </Icon>
);

export const DownloadIcon = ({ size }: { size?: number }) => (
  <Icon size={size}>
    <path d="M12 4v11M7 10l5 5 5-5M5 20h14" />
  </Icon>
);

export const ArrowDownIcon = ({ size = 16 }: { size?: number }) => (
  <Icon size={size}>
    <path d="M12 5v14M6 13l6 6 6-6" />
  </Icon>
);

export const RefreshIcon = () => (
  <Icon>
    <path d="M20 11a8 8 0 1 0-2.3 5.7M20 5v6h-6" />
  </Icon>
);

export const PaperclipIcon = ({ size = 20 }: { size?: number }) => (
  <Icon size={size}>
    <path d="M16.5 6.5 8.9 14.1a2 2 0 0 0 2.8 2.8l7.6-7.6a4 4 0 0 0-5.7-5.7L5.9 11.3a6 6 0 0 0 8.5 8.5l6.1-6.1" />
  </Icon>
);

export const MenuIcon = () => (
  <Icon size={20}>
    <path d="M4 7h16M4 12h16M4 17h16" />
  </Icon>
);

export const PlayIcon = () => (
  <Icon size={14}>
    <path d="M7 5v14l11-7z" fill="currentColor" />
  </Icon>
);

export const FilesIcon = () => (
  <Icon size={16}>
    <path d="M4 6a2 2 0 0 1 2-2h4l2 2h6a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2z" />
  </Icon>
);

/** A terminal: a prompt and a cursor in a window. */
export const TerminalIcon = () => (
  <Icon size={16}>
    <rect x="3" y="4" width="18" height="16" rx="2" />
    <path d="M7 9l3 3-3 3M13 15h4" />
  </Icon>
);

/** The brand mark: a cell (a rounded square) holding a spark of code. */
export const BrandMark = ({ size = 20 }: { size?: number }) => (
  <svg class="brand-mark" viewBox="0 0 24 24" width={size} height={size} aria-hidden="true" focusable="false">
    <rect x="2.5" y="2.5" width="19" height="19" rx="5" fill="currentColor" />
    <path
      d="M9 9l-3 3 3 3M15 9l3 3-3 3"
      fill="none"
      stroke="#fff"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
    />
  </svg>
);
