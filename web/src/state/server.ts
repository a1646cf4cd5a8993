/**
 * The server as this page knows it: its config (or why it could not be
 * reached), whether this page may talk to it (the key, and the prompt for
 * one), and the approval mode chosen here, first the server's default.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApprovalMode, ConversationSummary } from '../../../src/protocol/index';
import { ApiError, api, clearKey, onUnauthorized, type ServerConfig, storedKey, storeKey } from '../api';

export interface ServerOptions {
  /** Takes the conversation list that is loaded with the config. */
  onConversations: (list: ConversationSummary[]) => void;
  /** Forgets what the key signed out with could see. */
  onSignOut: () => void;
}

export type Server = ReturnType<typeof useServer>;

export function useServer({ onConversations, onSignOut }: ServerOptions) {
  const [config, setConfig] = useState<ServerConfig | null>(null);
  const [bootError, setBootError] = useState<string>();
  const [login, setLogin] = useState<{ error?: string } | null>(null);
  const [signedIn, setSignedIn] = useState(storedKey() !== null);
  const [approval, setApproval] = useState<ApprovalMode | null>(null);

  const load = useCallback(async () => {
    try {
      const loaded = await api.config();
      setConfig(loaded);
      setApproval((current) => current ?? loaded.approvalDefault);
      onConversations(await api.listConversations());
      setBootError(undefined);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return; // the key prompt is up
      setBootError((error as Error).message);
    }
  }, [onConversations]);

  useEffect(() => {
    onUnauthorized(() => {
      const hadKey = storedKey() !== null;
      if (hadKey) {
        clearKey();
        setSignedIn(false);
      }
      setLogin((current) => current ?? (hadKey ? { error: 'Your saved key is no longer accepted.' } : {}));
    });
    void load();
  }, [load]);

  const submitKey = async (key: string, remember: boolean) => {
    try {
      await api.checkKey(key);
    } catch (error) {
      setLogin({
        error:
          error instanceof ApiError && error.status === 401
            ? 'That key was not accepted. Check it and try again.'
            : `The server could not check the key: ${(error as Error).message}`,
      });
      return;
    }
    storeKey(key, remember);
    setSignedIn(true);
    setLogin(null);
    await load();
  };

  const signOut = () => {
    clearKey();
    setSignedIn(false);
    onSignOut();
    void load();
  };

  return {
    config,
    bootError,
    /** The key prompt, when it is up (with what was wrong with the last key). */
    login,
    signedIn,
    approval: approval ?? 'auto',
    setApproval,
    load,
    submitKey,
    signOut,
  };
}
