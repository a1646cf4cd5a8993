/** The whole page when the server could not be reached for its config: why, and a way to try again. */

export interface BootErrorProps {
  message: string;
  onRetry: () => void;
}

export function BootError({ message, onRetry }: BootErrorProps) {
  return (
    <div class="boot-error" role="alert">
      <h1>sandcell</h1>
      <p>The server could not be reached: {message}</p>
      <button type="button" class="button-primary" onClick={onRetry}>
        Try again
      </button>
    </div>
  );
}
